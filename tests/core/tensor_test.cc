#include "chorus/core/tensor.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "chorus/core/creation.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

TEST(TensorTest, EveryDtypeHasItsSizeAndName) {
  const std::pair<DType, size_t> cases[] = {{kFloat32, 4}, {kBFloat16, 2}, {kInt32, 4}, {kInt64, 8}, {kBool, 1}};
  for (auto [dtype, size] : cases) {
    Tensor t = zeros({3, 5}, dtype);
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.nbytes(), 15 * size) << dtype_name(dtype);
    EXPECT_EQ(t.to_vector<double>(), std::vector<double>(15, 0.0));
  }
  EXPECT_EQ(dtype_name(kBFloat16), "bfloat16");
}

TEST(TensorTest, StorageIs64ByteAligned) {
  for (int64_t n : {1, 7, 1023, 1 << 20}) {
    Tensor t = Tensor::empty({n}, kBool);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % 64, 0u) << n;
  }
}

TEST(TensorTest, CopiesAreShallowAndCloneIsDeep) {
  Tensor a = from_values({1.f, 2.f, 3.f});
  Tensor shallow = a;
  Tensor deep = a.clone();
  a.data<float>()[0] = 10.f;
  EXPECT_EQ(shallow.data<float>()[0], 10.f);
  EXPECT_EQ(deep.data<float>()[0], 1.f);
  EXPECT_TRUE(shallow.shares_storage(a));
  EXPECT_FALSE(deep.shares_storage(a));
}

TEST(TensorTest, ViewSharesStorage) {
  Tensor a = arange(12);
  Tensor v = a.view({3, 4});
  EXPECT_TRUE(v.shares_storage(a));
  EXPECT_EQ(v.shape(), Shape({3, 4}));
  a.data<float>()[5] = -1.f;
  EXPECT_EQ(v.to_vector<float>()[5], -1.f);
  EXPECT_THAT([&] { a.view({5, 2}); },
              ThrowsMessage<ShapeError>(HasSubstr("cannot view a tensor of shape (12,) (12 elements) as shape (5, 2)")));
}

TEST(TensorTest, FirstAxisSliceIsAZeroCopyReplicaSlice) {
  Tensor batch = arange(0, 20, 1, kInt64).view({10, 2});
  Tensor slice = batch.first_axis_slice(3, 7);
  EXPECT_EQ(slice.shape(), Shape({4, 2}));
  EXPECT_TRUE(slice.shares_storage(batch));
  EXPECT_EQ(slice.to_vector<int64_t>(), (std::vector<int64_t>{6, 7, 8, 9, 10, 11, 12, 13}));
  EXPECT_EQ(batch.first_axis_slice(10, 10).numel(), 0);  // an empty replica slice
  EXPECT_THAT([&] { batch.first_axis_slice(8, 11); },
              ThrowsMessage<IndexError>(HasSubstr("rows [8, 11) are out of range for shape (10, 2)")));
  EXPECT_THAT([&] { scalar(1).first_axis_slice(0, 1); },
              ThrowsMessage<ShapeError>(HasSubstr("cannot slice a scalar")));
}

TEST(TensorTest, TypedAccessChecksDtype) {
  Tensor t = zeros({2}, kInt32);
  EXPECT_NO_THROW(t.data<int32_t>());
  EXPECT_THAT([&] { t.data<float>(); },
              ThrowsMessage<DTypeError>(HasSubstr("requested float32 elements from a tensor of dtype int32 and shape (2,)")));
}

TEST(TensorTest, ItemNeedsExactlyOneElement) {
  EXPECT_EQ(scalar(2.5).item<double>(), 2.5);
  EXPECT_EQ(full({1, 1}, 7, kInt64).item<int>(), 7);
  EXPECT_THAT([] { zeros({2}).item<float>(); },
              ThrowsMessage<ShapeError>(HasSubstr("expected a tensor with one element, got shape (2,)")));
}

TEST(TensorTest, UndefinedTensorIsAnError) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_THAT([&] { t.shape(); }, ThrowsMessage<Error>(HasSubstr("use of an undefined tensor")));
}

TEST(TensorTest, CopyFromChecksShapeAndDtype) {
  Tensor dst = zeros({2, 2});
  dst.copy_from(ones({2, 2}));
  EXPECT_EQ(dst.to_vector<float>(), std::vector<float>(4, 1.f));
  EXPECT_THAT([&] { dst.copy_from(ones({4})); }, ThrowsMessage<ShapeError>(HasSubstr("expected a source of shape (2, 2)")));
  EXPECT_THAT([&] { dst.copy_from(ones({2, 2}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("and dtype float32, got shape (2, 2) and dtype int32")));
}

TEST(TensorTest, LargeBlocksAreReusedFromTheCache) {
  release_cached_host_memory();
  const void* first;
  {
    Tensor big = Tensor::empty({1 << 20});  // 4 MiB
    first = big.raw_data();
  }
  EXPECT_GE(cached_host_bytes(), size_t{4} << 20);
  Tensor again = Tensor::empty({1 << 20});
  EXPECT_EQ(again.raw_data(), first);
  EXPECT_EQ(cached_host_bytes(), 0u);
}

// Blocks of 8 MiB and more sit on 2 MiB boundaries and are advised to use transparent
// huge pages, so that their first touch faults once per 2 MiB, not once per 4 KiB.
TEST(TensorTest, BlocksOfEightMiBAndMoreAreOnHugePages) {
  release_cached_host_memory();
  Tensor big = Tensor::empty({3 << 20});  // 12 MiB
  const auto address = reinterpret_cast<uintptr_t>(big.raw_data());
  EXPECT_EQ(address % (uintptr_t{2} << 20), 0u);
  // Where transparent huge pages are on and the kernel says per mapping whether it may use
  // them, it must say so here.
  std::string enabled;
  std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"), enabled);
  if (enabled.empty() || enabled.find("[never]") != std::string::npos) return;
  std::ifstream smaps("/proc/self/smaps");
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx", &begin, &end) == 2) {  // a mapping's first line
      inside = begin <= address && address < end;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      EXPECT_NE(line.find('1'), std::string::npos) << line;
    }
  }
}

TEST(TensorTest, ALargeBlockServesSlightlyLargerRequestsLater) {
  // Blocks are sized up to 1/16 over the request: a tensor growing a little from step
  // to step (BERT's masked rows) reuses the block instead of first-touching a new one.
  release_cached_host_memory();
  const void* first;
  {
    Tensor block = Tensor::empty({41 << 18});  // 41 MiB: a 42 MiB block
    first = block.raw_data();
  }
  Tensor larger = Tensor::empty({(41 << 18) + (1 << 17)});  // 41.5 MiB
  EXPECT_EQ(larger.raw_data(), first);
}

TEST(TensorTest, MidSizeBlocksAreKeptByTheFreeingThreadBySize) {
  release_cached_host_memory();
  const void* first;
  {
    Tensor block = Tensor::empty({32000});  // 128,000 bytes
    first = block.raw_data();
    Tensor small = Tensor::empty({200});  // 800 bytes: below the cache
  }
  EXPECT_EQ(thread_cached_host_bytes(), 128000u);
  EXPECT_EQ(Tensor::empty({16000}).raw_data() == first, false);  // another size
  Tensor again = Tensor::empty({32000});
  EXPECT_EQ(again.raw_data(), first);
  EXPECT_EQ(thread_cached_host_bytes(), 64000u);  // the other size's block, freed above
  // Freed on another thread: that thread keeps it (and frees it when it exits).
  std::thread([t = std::move(again)]() mutable {
    t = Tensor();
    EXPECT_EQ(thread_cached_host_bytes(), 128000u);
  }).join();
  EXPECT_EQ(thread_cached_host_bytes(), 64000u);
  // At most 16 blocks of one size.
  {
    std::vector<Tensor> many;
    for (int i = 0; i < 20; ++i) many.push_back(Tensor::empty({2048}));  // 8 KiB each
  }
  EXPECT_EQ(thread_cached_host_bytes(), 64000u + 16 * 8192u);
  release_cached_host_memory();
  EXPECT_EQ(thread_cached_host_bytes(), 0u);
}

TEST(TensorTest, StorageOutlivesTheTensorThatMadeItOnAnotherThread) {
  Tensor shared = arange(1000);
  Tensor slice = shared.first_axis_slice(500, 1000);
  std::thread([s = std::move(shared)]() mutable { s = Tensor(); }).join();
  EXPECT_EQ(slice.to_vector<float>()[0], 500.f);
}

TEST(BFloat16Test, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(float(bfloat16(1.0f)), 1.0f);
  EXPECT_EQ(float(bfloat16(1.00390625f)), 1.0f);       // halfway between 1 and 1+2^-7: ties to even
  EXPECT_EQ(float(bfloat16(1.01171875f)), 1.015625f);  // halfway, rounds up to even
  EXPECT_TRUE(std::isnan(float(bfloat16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(float(bfloat16(INFINITY))));
}

}  // namespace
}  // namespace chorus
