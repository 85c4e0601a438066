// jit::Function: compiled calls give the eager results bit for bit (forward and a tape's
// gradients), retrace per signature, read variables live, and refuse — by running eagerly
// with a warning — what one static graph cannot be.
#include "chorus/jit/function.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "chorus/autograd/tape.h"
#include "chorus/autograd/variable.h"
#include "chorus/core/creation.h"
#include "chorus/core/trace_observer.h"
#include "chorus/losses/sparse_categorical_crossentropy.h"
#include "chorus/ops/ops.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using testing::random_tensor;
using testing::same_bits;

bool all_same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_bits(a[i], b[i])) return false;
  }
  return true;
}

// An MLP's forward pass over captured weights, as a Dense stack computes it.
struct Mlp {
  Tensor w1 = random_tensor({32, 64}, 11), b1 = random_tensor({64}, 12), w2 = random_tensor({64, 10}, 13);
  std::vector<Tensor> operator()(std::span<const Tensor> x) const {
    Tensor h = ops::gelu(ops::matmul(x[0], w1, b1, {}));
    return {ops::softmax(ops::matmul(h, w2), -1)};
  }
};

TEST(JitFunctionTest, CompiledCallsEqualTheEagerOnesAndANewShapeTracesAgain) {
  Mlp mlp;
  jit::Function f("mlp", [&](std::span<const Tensor> x) { return mlp(x); });
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const Tensor x = random_tensor({8, 32}, seed);
    EXPECT_TRUE(all_same_bits(f({x}), mlp(std::vector<Tensor>{x}))) << seed;
  }
  EXPECT_EQ(f.num_traces(), 1);
  EXPECT_NE(f.executable_for(std::vector<Tensor>{random_tensor({8, 32}, 1)}), nullptr);
  const Tensor x5 = random_tensor({5, 32}, 4);
  EXPECT_TRUE(all_same_bits(f({x5}), mlp(std::vector<Tensor>{x5})));
  EXPECT_TRUE(all_same_bits(f({x5}), mlp(std::vector<Tensor>{x5})));
  EXPECT_EQ(f.num_traces(), 2);
}

// The loss and gradients of a two-layer regression, tape inside the function.
std::vector<Tensor> loss_and_gradients(const autograd::Variable& w1, const autograd::Variable& b1,
                                       const autograd::Variable& w2, std::span<const Tensor> xy) {
  autograd::GradientTape tape;
  Tensor h = ops::relu(ops::add(ops::matmul(xy[0], w1), b1));
  Tensor loss = ops::mean(ops::square(ops::subtract(ops::matmul(h, w2), xy[1])));
  std::vector<Tensor> out = tape.gradient(loss, {w1.value(), b1.value(), w2.value()});
  out.insert(out.begin(), loss);
  return out;
}

TEST(JitFunctionTest, ATapesGradientsTracedInsideEqualTheEagerOnesAndVariablesAreReadLive) {
  autograd::Variable w1("w1", random_tensor({16, 24}, 21)), b1("b1", random_tensor({24}, 22)),
      w2("w2", random_tensor({24, 3}, 23));
  jit::Function step("step", [&](std::span<const Tensor> xy) { return loss_and_gradients(w1, b1, w2, xy); });
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const std::vector<Tensor> xy = {random_tensor({12, 16}, 100 + seed), random_tensor({12, 3}, 200 + seed)};
    const std::vector<Tensor> compiled = step(xy);
    ASSERT_EQ(compiled.size(), 4u);
    EXPECT_TRUE(all_same_bits(compiled, loss_and_gradients(w1, b1, w2, xy))) << seed;
    // An SGD update in place, between calls: the next call must see it.
    w1.assign(ops::subtract(w1.value(), ops::multiply(compiled[1], scalar(0.1))));
  }
  EXPECT_EQ(step.num_traces(), 1);
}

TEST(JitFunctionTest, ARunAllocatesNothingButItsResults) {
  struct CountAllocations : TraceObserver {
    int count = 0;
    void allocated(const Storage&) override { ++count; }
    void made_constant(const Tensor&) override {}
    void read_on_host(const Tensor&, const char*) override {}
    void cannot_trace(const char*) override {}
  };
  Mlp mlp;
  jit::Function f("mlp", [&](std::span<const Tensor> x) { return mlp(x); });
  const Tensor x = random_tensor({64, 32}, 5);
  f({x});  // traces
  CountAllocations counter;
  TraceObserverScope scope(&counter);
  f({x});
  EXPECT_EQ(counter.count, 1);  // the softmax's result
}

TEST(JitFunctionTest, AnOpWithNoCompiledFormRunsEagerlyWithAWarningNamingIt) {
  jit::Function f("twice", [&](std::span<const Tensor> x) {
    return std::vector<Tensor>{ops::exp(ops::concatenate({x[0], x[0]}, 0))};
  });
  const Tensor x = random_tensor({4, 4}, 31);
  ::testing::internal::CaptureStderr();
  f({x});
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("jit function 'twice' runs eagerly"), std::string::npos) << warning;
  EXPECT_NE(warning.find("'exp' reads input 0 ((8, 4) float32), which no traced kernel wrote"), std::string::npos)
      << warning;
  EXPECT_EQ(f.executable_for(std::vector<Tensor>{x}), nullptr);
  const Tensor other = random_tensor({4, 4}, 32);
  EXPECT_TRUE(same_bits(f({other})[0], ops::exp(ops::concatenate({other, other}, 0))));
}

// A result that no traced kernel wrote (top_k's indices, made by an op with no compiled
// form) is named, and the call runs eagerly.
TEST(JitFunctionTest, AResultNoTracedKernelWroteRunsEagerly) {
  jit::Function f("top", [](std::span<const Tensor> x) { return std::vector<Tensor>{ops::top_k(x[0], 2).second}; });
  const Tensor x = random_tensor({3, 5}, 36);
  ::testing::internal::CaptureStderr();
  const std::vector<Tensor> first = f({x});
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("jit function 'top' runs eagerly for these argument shapes: 'return' reads input 0 ((3, 2) "
                         "int64), which no traced kernel wrote"),
            std::string::npos)
      << warning;
  EXPECT_TRUE(same_bits(first[0], ops::top_k(x, 2).second));
  EXPECT_EQ(f.executable_for(std::vector<Tensor>{x}), nullptr);
}

// An embedding lookup, a bfloat16 round trip and masked attention with dropout, and the
// table's gradient through them (take's scatter-add, attention's backward): what a BERT
// step is made of.
std::vector<Tensor> attention_step(const autograd::Variable& table, std::span<const Tensor> a) {
  autograd::GradientTape tape;
  const Tensor rows = ops::cast(ops::cast(ops::take(table.value(), a[0], 0), kBFloat16), kFloat32);
  const Tensor q = ops::reshape(rows, {2, 3, 2, 4});  // (B, T, N, D)
  const ops::AttentionOutputs out = ops::dot_product_attention(
      q, ops::multiply(q, scalar(0.5f)), ops::exp(q), {.mask = a[1], .dropout_mask = a[2]});
  const Tensor loss = ops::sum(ops::multiply(out.output, out.output));
  return {out.output, out.probabilities, tape.gradient(loss, {table.value()})[0]};
}

TEST(JitFunctionTest, GatherCastAttentionAndTheirGradientsEqualTheEagerOnes) {
  autograd::Variable table("table", random_tensor({10, 8}, 33));
  jit::Function f("attention", [&](std::span<const Tensor> a) { return attention_step(table, a); });
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const Tensor ids = from_values<int32_t>({int32_t(seed), 9, 2, 2, 0, int32_t(seed + 4)}, {6});
    const Tensor mask = ops::greater(random_tensor({2, 1, 3, 3}, 40 + seed), scalar(-0.5f));
    const Tensor dropout = ops::multiply(ops::cast(ops::greater(random_tensor({2, 2, 3, 3}, 50 + seed), scalar(0.0f)),
                                                   kFloat32),
                                         scalar(2.0f));
    const std::vector<Tensor> args{ids, mask, dropout};
    EXPECT_TRUE(all_same_bits(f(args), attention_step(table, args))) << seed;
  }
  EXPECT_EQ(f.num_traces(), 1);
  ASSERT_NE(f.executable_for(std::vector<Tensor>{from_values<int32_t>({0, 0, 0, 0, 0, 0}, {6}),
                                                 ones({2, 1, 3, 3}, kBool), ones({2, 2, 3, 3})}),
            nullptr);
}

// A weighted mean's divisor is each call's own total of weights, not the one traced.
TEST(JitFunctionTest, AWeightedMeanDividesByEachCallsWeights) {
  const losses::SparseCategoricalCrossentropy loss(
      {.from_logits = true, .reduction = "mean_with_sample_weight"});
  jit::Function f("weighted", [&](std::span<const Tensor> a) { return std::vector<Tensor>{loss(a[0], a[1], a[2])}; });
  const Tensor labels = from_values<int32_t>({0, 2, 1, 1}, {4}), logits = random_tensor({4, 3}, 35);
  for (const std::vector<float>& weights : {std::vector<float>{1, 1, 0, 1}, std::vector<float>{0.5f, 0, 0, 0},
                                            std::vector<float>{0, 0, 0, 0}}) {
    const Tensor w = from_values<float>(weights, {4});
    EXPECT_TRUE(same_bits(f({labels, logits, w})[0], loss(labels, logits, w))) << weights[0];
  }
  EXPECT_EQ(f.num_traces(), 1);
  EXPECT_NE(f.executable_for(std::vector<Tensor>{labels, logits, from_values<float>({1, 1, 1, 1}, {4})}), nullptr);
}

// take's index check is part of its kernel: a compiled call still names a bad index.
TEST(JitFunctionTest, ACompiledTakeStillRaisesForAnIndexOutOfRange) {
  const Tensor table = random_tensor({10, 4}, 34);
  jit::Function f("lookup", [&](std::span<const Tensor> ids) {
    return std::vector<Tensor>{ops::exp(ops::take(table, ids[0], 0))};
  });
  const Tensor ids = from_values<int32_t>({3, 1, 4, 1}, {4});
  EXPECT_TRUE(same_bits(f({ids})[0], ops::exp(ops::take(table, ids, 0))));
  ASSERT_NE(f.executable_for(std::vector<Tensor>{ids}), nullptr);
  try {
    f({from_values<int32_t>({3, 1, 10, 1}, {4})});
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_STREQ(e.what(), "take: index 10 is out of range [0, 10) at position 2");
  }
}

TEST(JitFunctionTest, ControlFlowOnATensorsValueRunsEagerlyNamingTheRead) {
  jit::Function f("branch", [](std::span<const Tensor> x) {
    Tensor s = ops::sum(x[0]);
    return std::vector<Tensor>{s.item<float>() > 0 ? ops::exp(x[0]) : ops::negative(x[0])};
  });
  ::testing::internal::CaptureStderr();
  f({random_tensor({6}, 41)});
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("the host reads a traced tensor's values (item of a () tensor)"), std::string::npos)
      << warning;
  const Tensor x = ops::negative(ops::abs(random_tensor({6}, 42)));  // the other branch
  EXPECT_TRUE(same_bits(f({x})[0], ops::negative(x)));
}

// A host copy into a variable (BatchNormalization's moving statistics) is no kernel a graph
// could replay: the call runs eagerly, and the variable follows every call.
TEST(JitFunctionTest, AssigningATracedValueToAVariableRunsEagerly) {
  autograd::Variable total("total", zeros({3}), /*trainable=*/false);
  jit::Function f("accumulate", [&](std::span<const Tensor> x) {
    total.assign(ops::add(total.value(), x[0]));
    return std::vector<Tensor>{ops::exp(x[0])};
  });
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) f({ones({3})});
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("the host reads a traced tensor's values (Variable::assign of a (3,) tensor)"),
            std::string::npos)
      << warning;
  EXPECT_EQ(total.value().to_vector<float>(), (std::vector<float>{3, 3, 3}));
}

TEST(JitFunctionTest, AShapeThatKeepsChangingWarnsOnceNamingTheArgument) {
  jit::Function f("scale", [](std::span<const Tensor> a) { return std::vector<Tensor>{ops::multiply(a[0], a[1])}; },
                  {.max_traces = 2});
  const Tensor s = random_tensor({}, 51);
  ::testing::internal::CaptureStderr();
  for (int64_t n = 1; n <= 4; ++n) f({s, random_tensor({n}, 52)});
  const std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("jit function 'scale' was traced 3 times; argument 1's shape keeps changing (now (3,))"),
            std::string::npos)
      << warning;
  EXPECT_EQ(warning.find("traced 4 times"), std::string::npos) << warning;  // once
  EXPECT_EQ(f.num_traces(), 4);
  EXPECT_EQ(f.executable_for(std::vector<Tensor>{s, random_tensor({1}, 1)}), nullptr);  // evicted
  EXPECT_NE(f.executable_for(std::vector<Tensor>{s, random_tensor({4}, 1)}), nullptr);
}

TEST(JitFunctionTest, AnArgumentATapeTracksIsRefused) {
  jit::Function f("square", [](std::span<const Tensor> a) { return std::vector<Tensor>{ops::square(a[0])}; });
  autograd::GradientTape tape;
  const Tensor x = random_tensor({3}, 61);
  tape.watch(x);
  const Tensor y = ops::exp(x);
  try {
    f({y});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "jit function 'square': argument 0 is tracked by a GradientTape, and a compiled call records nothing "
                 "on it. Compute the gradients inside the function");
  }
}

TEST(JitFunctionTest, AFunctionCalledInsideAnotherTraceJoinsItsGraph) {
  jit::Function inner("inner", [](std::span<const Tensor> a) { return std::vector<Tensor>{ops::tanh(a[0])}; });
  jit::Function outer("outer", [&](std::span<const Tensor> a) {
    return std::vector<Tensor>{ops::add(inner({a[0]})[0], a[0])};
  });
  const Tensor x = random_tensor({100}, 71);
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(same_bits(outer({x})[0], ops::add(ops::tanh(x), x)));
  ASSERT_NE(outer.executable_for(std::vector<Tensor>{x}), nullptr);
  EXPECT_EQ(inner.num_traces(), 0);
}

class JitDumpTest : public testing::TempDirTest {};

TEST_F(JitDumpTest, TheGraphIsWrittenBeforeAndAfterThePasses) {
  ::setenv("CHORUS_JIT_DUMP", dir().c_str(), 1);
  jit::Function f("chain", [](std::span<const Tensor> a) {
    return std::vector<Tensor>{ops::sqrt(ops::abs(ops::multiply(a[0], a[0])))};
  });
  f({random_tensor({8}, 81)});
  ::unsetenv("CHORUS_JIT_DUMP");
  auto read = [&](const std::string& name) {
    std::ifstream in(dir_ / name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string before = read("chain.1.before.txt"), after = read("chain.1.after.txt");
  EXPECT_NE(before.find("%1 = multiply(%0, %0)  (8,) float32"), std::string::npos) << before;
  EXPECT_NE(after.find("= fused(%0)"), std::string::npos) << after;
  EXPECT_NE(read("chain.1.after.dot").find("digraph \"chain\""), std::string::npos);
}

}  // namespace
}  // namespace chorus
