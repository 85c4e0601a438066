// GatheredVariables: a variable split over two devices by rows reads whole on each; freed,
// its whole value holds no memory, and a read after gathers it again.
#include "chorus/replicas/gathered_variables.h"

#include <gtest/gtest.h>

#include <thread>

#include "chorus/comm/local_communicator.h"
#include "chorus/core/creation.h"

namespace chorus::replicas {
namespace {

TEST(GatheredVariablesTest, ReadsWholeFreesInPlaceAndGathersAgain) {
  const Tensor whole = from_values<float>({1, 2, 3, 4, 5, 6}, Shape{3, 2});
  const Tensor twice = from_values<float>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{4, 2});
  autograd::Variable kernel("d/kernel", twice.clone());
  const Sharding rows{0, 0, Shape{4, 2}};
  kernel.set_device_values({sharded_tensor(twice.first_axis_slice(0, 2).clone(), rows),
                            sharded_tensor(twice.first_axis_slice(2, 4).clone(), rows)},
                           {0, 1});
  autograd::Variable whole_variable("d/bias", whole.clone());  // replicated: not gathered
  whole_variable.set_device_values({whole.clone(), whole.clone()}, {});
  autograd::Variable slot("optimizer/d/kernel/m", twice.clone(), /*trainable=*/false);  // its own blocks only
  slot.set_device_values({sharded_tensor(twice.first_axis_slice(0, 2).clone(), rows),
                          sharded_tensor(twice.first_axis_slice(2, 4).clone(), rows)},
                         {0, 1});
  auto comms = comm::make_local_communicators(2);
  std::vector<std::thread> devices;
  for (int d = 0; d < 2; ++d) {
    devices.emplace_back([&, d] {
      GatheredVariables gathered(d, [&](int) -> comm::Communicator& { return *comms[static_cast<size_t>(d)]; });
      const std::vector<autograd::Variable> placed{kernel, whole_variable, slot};
      gathered.start(placed, [](const Sharding& s) { return s.axis == 0; });
      const Tensor first = gathered.value(kernel.id());
      EXPECT_EQ(first.to_vector<float>(), twice.to_vector<float>()) << d;
      EXPECT_TRUE(first.impl()->autograd.trainable);
      gathered.free(kernel.id());
      EXPECT_EQ(first.impl()->storage, nullptr) << d;  // every holder of the tensor let go
      EXPECT_EQ(gathered.value(kernel.id()).to_vector<float>(), twice.to_vector<float>()) << d;
      EXPECT_THROW(gathered.value(whole_variable.id()), Error);
      EXPECT_THROW(gathered.value(slot.id()), Error);
      gathered.finish(/*failed=*/false);
    });
  }
  for (std::thread& t : devices) t.join();
}

}  // namespace
}  // namespace chorus::replicas
