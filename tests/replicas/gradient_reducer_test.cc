#include "chorus/replicas/gradient_reducer.h"

#include "chorus/layers/embedding.h"

#include <cstdlib>
#include <exception>
#include <string>
#include <thread>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/comm/local_communicator.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::replicas {
namespace {

using autograd::GradientTape;
using autograd::Variable;
using namespace testing::test_names;

// A two-layer model whose first kernel (10 x 6 = 60 floats) is larger than half of a
// 64-float bucket, so the reducer cuts it into two row blocks of 5 rows.
struct SmallModel {
  Variable k1{"k1", random_tensor({10, 6}, 11)};
  Variable b1{"b1", random_tensor({6}, 12)};
  Variable k2{"k2", random_tensor({6, 1}, 13)};
  std::vector<Variable> variables() const { return {k1, b1, k2}; }
  Tensor loss(const Tensor& x) const {
    Tensor h = ops::relu(ops::matmul(x, k1.value()) + b1.value());
    return ops::sum(ops::square(ops::matmul(h, k2.value())));
  }
};
constexpr int64_t kBucketBytes = 64 * 4;

TEST(GradientReducerTest, ALargeKernelIsCutIntoRowBlocksOfItsOwn) {
  const SmallModel model;
  const auto variables = model.variables();
  // In reverse: k2 (6) and b1 (6) share a bucket; k1's two blocks get one each.
  EXPECT_EQ(GradientReducer::plan_buckets(variables, kBucketBytes), (std::vector<int64_t>{12, 30, 30}));
  // A 1 MiB bucket holds them all.
  EXPECT_EQ(GradientReducer::plan_buckets(variables), (std::vector<int64_t>{72}));
}

TEST(GradientReducerTest, LargeEmbeddingTablesAreLeftOutOfTheBuckets) {
  // Their gradients travel as rows (replica context), not in buckets.
  const SmallModel model;
  Variable table{"embedding/embeddings", random_tensor({GradientReducer::kRowExchangeMinRows, 2}, 14)};
  table.set_sparse_gradients(true);
  const std::vector<Variable> variables{table, model.k1, model.b1, model.k2};
  EXPECT_EQ(GradientReducer::plan_buckets(variables), (std::vector<int64_t>{72}));
  // A smaller table is all-reduced whole.
  Variable small{"small/embeddings", random_tensor({10, 2}, 15)};
  small.set_sparse_gradients(true);
  EXPECT_EQ(GradientReducer::plan_buckets(std::vector<Variable>{small, model.k2}), (std::vector<int64_t>{26}));
  layers::Embedding embedding(50, 4);
  embedding(from_values<int32_t>({1}, {1}));
  EXPECT_TRUE(embedding.embeddings().sparse_gradients());
}

// Two replicas stream their gradients (the first kernel in row blocks, from inside its
// matmul backward) and get the scaled sum of both, as computed without streaming.
TEST(GradientReducerTest, StreamedRowBlocksReduceToTheSumOfTheReplicasGradients) {
  const SmallModel model;
  const auto variables = model.variables();
  const std::vector<Tensor> inputs = {random_tensor({4, 10}, 21), random_tensor({3, 10}, 22)};
  std::vector<std::vector<Tensor>> local(2);
  for (size_t r = 0; r < 2; ++r) {
    GradientTape tape;
    local[r] = tape.gradient(model.loss(inputs[r]), std::vector<Tensor>(variables.begin(), variables.end()));
  }

  GradientReducer reducer(2, kBucketBytes);
  auto comms = comm::make_local_communicators(2, comm::Seconds(30));
  std::vector<std::vector<Tensor>> reduced(2);
  std::vector<int> blocks_streamed(2, 0);
  std::vector<std::exception_ptr> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      backend::cpu::set_intra_op_threads(1);
      try {
        reducer.begin(r, variables, 0.5f, comms[static_cast<size_t>(r)].get(), nullptr);
        autograd::GradientStreaming streaming = reducer.streaming(r);
        auto rows_ready = streaming.rows_ready;
        streaming.rows_ready = [&, r, rows_ready](size_t index, const Tensor& g, int64_t end) {
          if (index == 0) ++blocks_streamed[static_cast<size_t>(r)];
          rows_ready(index, g, end);
        };
        GradientTape tape;
        const Tensor loss = model.loss(inputs[static_cast<size_t>(r)]);
        std::vector<Tensor> sources(variables.begin(), variables.end());
        const std::vector<Tensor> grads = tape.gradient(loss, sources, streaming);
        reduced[static_cast<size_t>(r)] = reducer.finish(r, grads, variables);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(blocks_streamed[static_cast<size_t>(r)], 2) << "replica " << r;
    for (size_t i = 0; i < variables.size(); ++i) {
      const Tensor expected = ops::multiply(local[0][i], scalar(0.5)) + ops::multiply(local[1][i], scalar(0.5));
      EXPECT_TRUE(tensors_near(reduced[static_cast<size_t>(r)][i], expected, 1e-6, 1e-6))
          << "replica " << r << ", " << variables[i].path();
      EXPECT_EQ(reduced[static_cast<size_t>(r)][i].shape(), variables[i].shape());
    }
  }
}

TEST(GradientReducerTest, BucketBytesComeFromTheEnvironment) {
  ::unsetenv("CHORUS_GRADIENT_BUCKET_BYTES");
  EXPECT_EQ(gradient_bucket_bytes_from_env(), int64_t{1} << 20);
  ::setenv("CHORUS_GRADIENT_BUCKET_BYTES", "4096", 1);
  EXPECT_EQ(gradient_bucket_bytes_from_env(), 4096);
  for (const char* bad : {"1MiB", "2", "-8"}) {
    ::setenv("CHORUS_GRADIENT_BUCKET_BYTES", bad, 1);
    EXPECT_THAT([] { gradient_bucket_bytes_from_env(); },
                ::testing::ThrowsMessage<ValueError>(::testing::HasSubstr(
                    std::string("CHORUS_GRADIENT_BUCKET_BYTES: expected a number of bytes >= 4, got '") + bad + "'")));
  }
  ::unsetenv("CHORUS_GRADIENT_BUCKET_BYTES");
}

}  // namespace
}  // namespace chorus::replicas
