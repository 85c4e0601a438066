#include "chorus/autograd/tape.h"

#include <memory>
#include <thread>

#include "chorus/autograd/variable.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using autograd::GradientTape;
using autograd::Variable;
using namespace testing::test_names;

TEST(GradientTapeTest, VariablesAreWatchedAutomatically) {
  Variable w("dense/kernel", from_values({2.f, 3.f}));
  Tensor x = from_values({5.f, 7.f});
  GradientTape tape;
  Tensor loss = ops::sum(w * x);
  auto grads = tape.gradient(loss, {w});
  EXPECT_TRUE(tensors_near(grads[0], x));
}

TEST(GradientTapeTest, GradientsFromEveryUseAccumulate) {
  Variable w("w", from_values({2.f, -3.f}));
  GradientTape tape;
  Tensor loss = ops::sum(w * w + w);  // d/dw = 2w + 1
  auto grads = tape.gradient(loss, {w});
  EXPECT_TRUE(tensors_near(grads[0], from_values({5.f, -5.f})));
}

TEST(GradientTapeTest, UnwatchedAndUnconnectedSourcesGetUndefinedGradients) {
  Tensor x = from_values({1.f, 2.f});
  Variable unused("unused", from_values({1.f}));
  Variable w("w", from_values({3.f, 4.f}));
  GradientTape tape;
  Tensor loss = ops::sum(w * x);
  auto grads = tape.gradient(loss, {x, unused});
  EXPECT_FALSE(grads[0].defined());
  EXPECT_FALSE(grads[1].defined());
}

TEST(GradientTapeTest, NonTrainableVariablesAreNotWatched) {
  Variable moving_mean("bn/moving_mean", from_values({1.f, 2.f}), /*trainable=*/false);
  Variable w("w", from_values({3.f, 4.f}));
  GradientTape tape;
  Tensor loss = ops::sum(w * moving_mean);
  auto grads = tape.gradient(loss, {moving_mean, w});
  EXPECT_FALSE(grads[0].defined());
  EXPECT_TRUE(tensors_near(grads[1], moving_mean.value()));
}

TEST(GradientTapeTest, NoGradGuardStopsRecording) {
  Variable w("w", from_values({1.f, 2.f}));
  GradientTape tape;
  Tensor y;
  {
    autograd::NoGradGuard no_grad;
    EXPECT_FALSE(autograd::is_recording());
    y = w * w;
  }
  EXPECT_TRUE(autograd::is_recording());
  EXPECT_EQ(tape.num_records(), 0u);
  auto grads = tape.gradient(ops::sum(y), {w});
  EXPECT_FALSE(grads[0].defined());
}

// Python's `with tf.GradientTape() as tape:` ends before tape.gradient(): the stopped tape
// keeps what it recorded, records nothing after, and hands recording back to the outer tape.
TEST(GradientTapeTest, AStoppedTapeKeepsItsRecordsAndTheOuterTapeRecordsAgain) {
  Variable w("w", from_values({1.f, 2.f}));
  GradientTape outer(/*persistent=*/true);
  auto inner = std::make_unique<GradientTape>();
  Tensor loss = ops::sum(w * w);  // d/dw = 2w
  EXPECT_THROW(outer.stop_recording(), ValueError);  // not the innermost
  inner->stop_recording();
  inner->stop_recording();  // idempotent
  EXPECT_FALSE(inner->recording());
  Tensor later = ops::sum(w * 3.f);  // recorded by the outer tape only
  EXPECT_EQ(inner->num_records(), 2u);
  EXPECT_TRUE(tensors_near(inner->gradient(loss, {w})[0], from_values({2.f, 4.f})));
  std::thread([&] { inner.reset(); }).join();  // destroyed elsewhere: this thread's tape stays
  EXPECT_EQ(autograd::current_tape(), &outer);
  EXPECT_TRUE(tensors_near(outer.gradient(later, {w})[0], from_values({3.f, 3.f})));
}

TEST(GradientTapeTest, NonPersistentTapeAnswersOnce) {
  Variable w("w", from_values({1.f}));
  GradientTape tape;
  Tensor loss = ops::sum(w * w);
  tape.gradient(loss, {w});
  EXPECT_EQ(tape.num_records(), 0u);  // records freed by the backward pass
  EXPECT_THAT([&] { tape.gradient(loss, {w}); },
              ThrowsMessage<Error>(HasSubstr("a non-persistent tape can compute gradients only once")));
}

TEST(GradientTapeTest, PersistentTapeAnswersAgain) {
  Variable w("w", from_values({1.5f}));
  GradientTape tape(/*persistent=*/true);
  Tensor y = w * w;
  Tensor z = y * w;
  auto g1 = tape.gradient(ops::sum(y), {w});
  auto g2 = tape.gradient(ops::sum(z), {w});
  EXPECT_TRUE(tensors_near(g1[0], from_values({3.f})));
  EXPECT_TRUE(tensors_near(g2[0], from_values({6.75f})));
}

TEST(GradientTapeTest, OutputGradientShapeIsChecked) {
  Variable w("w", from_values({1.f, 2.f}));
  GradientTape tape;
  Tensor y = w * w;
  EXPECT_THAT([&] { tape.gradient(y, {w}, ones({3})); },
              ThrowsMessage<ShapeError>(HasSubstr("output_gradient has shape (3,), but target has shape (2,)")));
}

TEST(GradientTapeTest, TapesOnDifferentThreadsDoNotShareState) {
  // Two replica threads differentiate the same variable at once; each gets its own answer.
  Variable w("w", random_tensor({64}, 1));
  std::vector<Tensor> results(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      Tensor x = full({64}, t + 1.0);
      for (int step = 0; step < 200; ++step) {
        GradientTape tape;
        Tensor loss = ops::sum(w * x);
        results[t] = tape.gradient(loss, {w})[0];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(tensors_near(results[0], full({64}, 1.0)));
  EXPECT_TRUE(tensors_near(results[1], full({64}, 2.0)));
}

TEST(GradientTapeTest, BroadcastingGradientsSumToInputShape) {
  testing::expect_gradients_match([](const std::vector<Tensor>& in) { return in[0] * in[1] + in[0]; },
                                  {random_tensor({3, 4}, 1), random_tensor({4}, 2)});
}

TEST(VariableTest, PathNameAndAssign) {
  Variable v("dense_1/kernel", zeros({2, 2}));
  EXPECT_EQ(v.path(), "dense_1/kernel");
  EXPECT_EQ(v.name(), "kernel");
  v.assign(ones({2, 2}));
  EXPECT_TRUE(tensors_near(v.value(), ones({2, 2})));
  EXPECT_THAT([&] { v.assign(ones({3})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("Variable 'dense_1/kernel': cannot assign a value of shape (3,) to a variable of shape (2, 2)")));
  EXPECT_THAT([&] { v.assign(ones({2, 2}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("cannot assign a value of dtype int32 to a variable of dtype float32")));
}

// A worker's rows of a table split across workers: its block (padded past the table's
// end, all padding where the table has fewer rows than workers) and whole loads.
TEST(VariableTest, KeepRowsHoldsOneBlockAndAssignWholeLoadsIt) {
  Variable v("table", from_values<float>({0, 1, 2, 3, 4, 5}, Shape{3, 2}));
  v.keep_rows(2, 2);  // the second of two workers
  EXPECT_EQ(v.shape(), (Shape{2, 2}));
  EXPECT_EQ(v.whole_shape(), (Shape{3, 2}));
  EXPECT_EQ(v.row_shard()->begin, 2);
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{4, 5, 0, 0}));
  v.assign_whole(from_values<float>({6, 7, 8, 9, 10, 11}, Shape{3, 2}));
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{10, 11, 0, 0}));
  EXPECT_THAT([&] { v.assign_whole(ones({2, 2})); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("Variable 'table': cannot assign a value of shape (2, 2) to a variable of shape (3, 2)")));

  Variable past("small", ones({1, 2}));
  past.keep_rows(2, 1);  // the third of three workers of a 1-row table
  EXPECT_EQ(past.value().to_vector<float>(), (std::vector<float>{0, 0}));
  EXPECT_THAT([&] { Variable("x", ones({3})).keep_rows(-1, 2); },
              ThrowsMessage<ValueError>(HasSubstr("Variable 'x': cannot keep rows [-1, 1) of a value of shape (3,)")));
}

TEST(VariableTest, TrainableVariablesMustBeFloating) {
  EXPECT_THAT([] { Variable("step", zeros({}, kInt64)); },
              ThrowsMessage<DTypeError>(HasSubstr("Variable 'step': a trainable variable must be floating, got dtype int64")));
  EXPECT_NO_THROW(Variable("step", zeros({}, kInt64), /*trainable=*/false));
}

}  // namespace
}  // namespace chorus

namespace chorus::autograd {
namespace {

TEST(NeedsGradientTest, OnlyTensorsTheCurrentTapeTracks) {
  Variable w("w", ones({2, 2}));
  Tensor data = ones({2, 2});
  Tensor labels = zeros({2}, kInt32);
  EXPECT_FALSE(needs_gradient(w.value()));  // no tape
  GradientTape tape;
  EXPECT_TRUE(needs_gradient(w.value()));
  EXPECT_FALSE(needs_gradient(data));
  EXPECT_FALSE(needs_gradient(labels));
  tape.watch(data);
  EXPECT_TRUE(needs_gradient(data));
  NoGradGuard off;
  EXPECT_FALSE(needs_gradient(w.value()));
}

TEST(NeedsGradientTest, MatmulOfDataAndWeightsGivesTheWeightGradientOnly) {
  Variable w("w", from_values<float>({1, 2, 3, 4}, {2, 2}));
  Tensor x = from_values<float>({1, 0, 2, 1}, {2, 2});
  GradientTape tape;
  Tensor loss = ops::sum(ops::matmul(x, w));
  std::vector<Tensor> grads = tape.gradient(loss, {w.value(), x});
  EXPECT_EQ(grads[0].to_vector<float>(), (std::vector<float>{3, 3, 1, 1}));  // x^T @ ones
  EXPECT_FALSE(grads[1].defined());
}

}  // namespace
}  // namespace chorus::autograd

namespace chorus::autograd {
namespace {

// The streaming hook reports each source once, with its final gradient, and reports the
// last layer's weights before the first layer's (the order backward finishes them).
TEST(GradientTapeStreaming, ReportsEachSourceOnceWithItsFinalGradient) {
  Variable w1("w1", from_values<float>({0.5f, -1.0f, 2.0f, 0.25f}, Shape{2, 2}));
  Variable w2("w2", from_values<float>({1.5f, -0.5f}, Shape{2, 1}));
  Variable unused("unused", from_values<float>({1.0f}, Shape{1}));
  Tensor x = from_values<float>({1.0f, 2.0f, -1.0f, 0.5f, 3.0f, 1.0f}, Shape{3, 2});
  GradientTape tape;
  // w1 is used twice, so its gradient is final only after its first use is processed.
  Tensor h = ops::matmul(ops::matmul(x, w1.value()), w1.value());
  Tensor loss = ops::sum(ops::matmul(h, w2.value()));
  std::vector<Tensor> sources{w1.value(), w2.value(), unused.value()};
  std::vector<std::pair<size_t, Tensor>> reported;
  auto grads = tape.gradient(loss, sources, [&](size_t i, const Tensor& g) { reported.emplace_back(i, g); });
  ASSERT_EQ(reported.size(), 3u);
  EXPECT_EQ(reported[0].first, 2u);  // unused: final at once, undefined
  EXPECT_FALSE(reported[0].second.defined());
  EXPECT_EQ(reported[1].first, 1u);
  EXPECT_EQ(reported[2].first, 0u);
  EXPECT_TRUE(reported[1].second.same(grads[1]));
  EXPECT_TRUE(reported[2].second.same(grads[0]));
}


// A kernel used once: the matmul backward hands its gradient over in the row blocks the
// consumer asked for, each final when handed over, with the values of the whole product.
TEST(GradientTapeStreaming, AKernelUsedOnceStreamsInTheRowBlocksAskedFor) {
  Variable w("w", random_tensor({7, 3}, 5));
  const Tensor x = random_tensor({5, 7}, 6);
  Tensor expected;
  {
    GradientTape tape;
    expected = tape.gradient(ops::sum(ops::square(ops::matmul(x, w.value()))), {w.value()})[0];
  }
  const std::vector<int64_t> ends = {2, 5, 7};
  std::vector<int64_t> reported_ends;
  std::vector<float> streamed(21, 0.0f);
  GradientStreaming streaming{
      .ready = [](size_t, const Tensor&) {},
      .row_ends = [&](size_t) { return std::span<const int64_t>(ends); },
      .rows_ready =
          [&](size_t index, const Tensor& g, int64_t end) {
            EXPECT_EQ(index, 0u);
            const int64_t begin = reported_ends.empty() ? 0 : reported_ends.back();
            for (int64_t i = begin * 3; i < end * 3; ++i) streamed[static_cast<size_t>(i)] = g.data<float>()[i];
            reported_ends.push_back(end);
          }};
  GradientTape tape;
  Tensor loss = ops::sum(ops::square(ops::matmul(x, w.value())));
  std::vector<Tensor> sources{w.value()};
  const Tensor grad = tape.gradient(loss, sources, streaming)[0];
  EXPECT_EQ(reported_ends, ends);
  EXPECT_TRUE(tensors_near(from_values(streamed, Shape{7, 3}), expected, 0, 1e-6));
  EXPECT_TRUE(tensors_near(grad, expected, 0, 1e-6));
}

// No stream where the record does not produce the whole gradient (a kernel used twice),
// and an empty batch streams zeros.
TEST(GradientTapeStreaming, OnlyAWholeGradientIsStreamed) {
  Variable w("w", random_tensor({3, 3}, 7));
  const std::vector<int64_t> ends = {1, 3};
  int streamed = 0;
  GradientStreaming streaming{.ready = [](size_t, const Tensor&) {},
                              .row_ends = [&](size_t) { return std::span<const int64_t>(ends); },
                              .rows_ready = [&](size_t, const Tensor&, int64_t) { ++streamed; }};
  std::vector<Tensor> sources{w.value()};
  {
    GradientTape tape;
    Tensor loss = ops::sum(ops::matmul(ops::matmul(random_tensor({2, 3}, 8), w.value()), w.value()));
    tape.gradient(loss, sources, streaming);
  }
  EXPECT_EQ(streamed, 0);
  GradientTape tape;
  Tensor loss = ops::sum(ops::matmul(Tensor::empty({0, 3}, kFloat32), w.value()));
  const Tensor grad = tape.gradient(loss, sources, streaming)[0];
  EXPECT_EQ(streamed, 2);
  EXPECT_EQ(grad.to_vector<float>(), std::vector<float>(9, 0.0f));
}

}  // namespace
}  // namespace chorus::autograd
