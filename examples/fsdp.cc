// Fully sharded data parallelism (ZeRO-3, PyTorch's FSDP) on 4 logical CPU devices: each
// device stores a quarter of every weight's rows and of its optimizer state, and a step
// gathers the weights whole while it runs. Trains 3 epochs on random data, saves a
// checkpoint in shards into CHECKPOINT_DIR, reloads it on one device, and re-runs the
// same steps on one device to show that they agree.
//
//   build/fsdp /tmp/fsdp_checkpoint
#include <cstdio>
#include <iostream>

#include "chorus/chorus.h"

namespace ch = chorus;
namespace dist = chorus::distribution;

std::unique_ptr<ch::Model> make_model() {
  ch::Tensor inputs = ch::layers::Input({28, 28, 1});
  ch::Tensor y = ch::layers::Flatten()(inputs);
  y = ch::layers::Dense(512, {.activation = "relu", .name = "d1"})(y);
  y = ch::layers::Dense(256, {.activation = "relu", .name = "d2"})(y);
  y = ch::layers::Dense(10, {.activation = "softmax", .name = "d3"})(y);
  return std::make_unique<ch::Model>(inputs, y);
}

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::cerr << "usage: fsdp CHECKPOINT_DIR\n";
    return 2;
  }
  ch::set_cpu_devices(4);  // as LogicalDeviceConfiguration: 4 devices on this CPU
  dist::DataParallel fully_sharded(ch::devices(), {.shard = dist::Shard::kFull});

  ch::Generator gen(0);
  const ch::Tensor x = ch::normal({256, 28, 28, 1}, gen), y = ch::normal({256, 10}, gen);
  const auto dataset = ch::data::Dataset::from_tensor_slices(ch::Tree::list({x, y})).batch(32);

  ch::layers::set_random_seed(1);
  std::unique_ptr<ch::Model> model;
  {
    auto scope = fully_sharded.scope();
    model = make_model();
    model->compile({.optimizer = "adam", .loss = "mse"});
  }
  model->fit(dataset, {.epochs = 3});
  model->save(argv[1]);  // model-0000K-of-0000N.safetensors and their index

  ch::layers::set_random_seed(1);
  auto one_device = make_model();
  one_device->compile({.optimizer = "adam", .loss = "mse"});
  one_device->fit(dataset, {.epochs = 3, .verbose = 0});
  const auto reloaded = ch::models::load_model(argv[1]);  // on one device

  const ch::models::DeviceStatePlan plan = *ch::models::device_state_plan(*model);
  const auto total = [](const ch::models::StateParts& p) {
    return static_cast<long long>(p.parameters + p.gradients + p.optimizer);
  };
  std::printf("max_relative_difference_vs_one_device: %.3g\n",
              ch::models::max_relative_difference(model->weights(), one_device->weights()));
  std::printf("state_bytes_per_device: %lld of %lld\n", total(plan.largest_device), total(plan.one_device));
  std::printf("reloaded_max_relative_difference: %.3g\n",
              ch::models::max_relative_difference(reloaded->weights(), model->weights()));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "fsdp: " << e.what() << "\n";
  return 1;
}
