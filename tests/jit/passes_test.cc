// The jit's passes and memory plan, each on small traced graphs: what they drop, join and
// place, and that the rewritten graph still computes what the ops do.
#include "chorus/jit/passes.h"

#include <gtest/gtest.h>

#include "chorus/core/creation.h"
#include "chorus/jit/executable.h"
#include "chorus/jit/memory_plan.h"
#include "chorus/jit/tracer.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using testing::random_tensor;
using testing::same_bits;

// The graph of fn(arguments), traced once.
template <class Fn>
jit::Graph trace(std::vector<Tensor> arguments, Fn&& fn) {
  jit::Tracer tracer("test", arguments);
  std::vector<Tensor> results = fn(arguments);
  EXPECT_EQ(tracer.failure(), "");
  return tracer.finish(results);
}

std::vector<std::string> ops_of(const jit::Graph& graph) {
  std::vector<std::string> out;
  for (const jit::Node& node : graph.nodes) {
    std::string name = node.op;
    for (size_t m = 0; m < node.members.size(); ++m) name += (m == 0 ? "[" : ",") + node.members[m].op;
    out.push_back(node.members.empty() ? name : name + "]");
  }
  return out;
}

TEST(JitPassesTest, DeadCodeGoesAndWritesToExternalMemoryStay) {
  Tensor x = random_tensor({4, 8}, 1), kept = zeros({4, 8});
  jit::Graph g = trace({x}, [&](const std::vector<Tensor>& a) {
    Tensor unused = ops::exp(a[0]);
    Tensor y = ops::square(a[0]);
    jit::launch("store", {y}, {kept}, [](auto in, auto out) { out[0].copy_from(in[0]); });  // a side effect
    return std::vector<Tensor>{ops::negative(a[0])};
  });
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(jit::eliminate_dead_code(g), 1);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"square", "store", "negative"}));
}

TEST(JitPassesTest, ARunOfElementwiseNodesBecomesOnePassKeepingIntermediatesInTheBlock) {
  Tensor x = random_tensor({3, 1000}, 2), b = random_tensor({3, 1000}, 3);
  auto fn = [&](const std::vector<Tensor>& a) {
    Tensor t = ops::tanh(ops::multiply(a[0], scalar(0.5)));
    Tensor sum = ops::add(t, a[1]);
    Tensor product = ops::matmul(t, ops::transpose(a[1]));
    return std::vector<Tensor>{sum, product};
  };
  jit::Graph g = trace({x, b}, fn);
  EXPECT_EQ(jit::fuse_elementwise(g), 3);
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"fused[multiply,tanh,add]", "transpose", "matmul"}));
  EXPECT_EQ(g.nodes[0].internal.size(), 1u);  // the product with 0.5 lives only in the block
  EXPECT_EQ(g.nodes[0].outputs.size(), 2u);   // tanh's value (the matmul reads it) and the result
  jit::Executable exe(std::move(g));
  const std::vector<Tensor> expected = fn({x, b});
  const std::vector<Tensor> got = exe.run(std::vector<Tensor>{x, b});
  EXPECT_TRUE(same_bits(got[0], expected[0]));
  EXPECT_TRUE(same_bits(got[1], expected[1]));
}

// A scalar operand stays on its element; a full-size one advances block by block. The
// sizes cross the block edge (kFusedBlock) and the thread split.
TEST(JitPassesTest, FusedPassesMatchTheOpsBitForBitAcrossBlockEdgesAndScalars) {
  for (int64_t n : {int64_t{1}, jit::kFusedBlock - 1, jit::kFusedBlock + 1, int64_t{3} * jit::kFusedBlock + 7,
                    int64_t{100003}}) {
    Tensor x = random_tensor({n}, 4), y = random_tensor({n}, 5), s = random_tensor({}, 6);
    auto fn = [&](const std::vector<Tensor>& a) {
      Tensor u = ops::subtract(a[2], ops::multiply(a[0], a[1]));  // scalar - vector
      Tensor v = ops::gelu(ops::divide(u, a[2]));                 // vector / scalar
      return std::vector<Tensor>{ops::maximum(v, ops::sigmoid(a[1]))};
    };
    jit::Graph g = trace({x, y, s}, fn);
    jit::eliminate_dead_code(g);
    EXPECT_GE(jit::fuse_elementwise(g), 5) << n;
    jit::Executable exe(std::move(g));
    EXPECT_TRUE(same_bits(exe.run(std::vector<Tensor>{x, y, s})[0], fn({x, y, s})[0])) << n;
  }
}

TEST(JitPassesTest, ABroadcastOperandThatIsNotAScalarEndsTheRun) {
  Tensor x = random_tensor({16, 8}, 7), row = random_tensor({8}, 8);
  jit::Graph g = trace({x, row}, [&](const std::vector<Tensor>& a) {
    return std::vector<Tensor>{ops::exp(ops::add(ops::relu(a[0]), a[1]))};
  });
  EXPECT_EQ(jit::fuse_elementwise(g), 0);  // relu | add(row broadcast) | exp: no run of two
  EXPECT_EQ(ops_of(g), (std::vector<std::string>{"relu", "add", "exp"}));
}

TEST(JitPassesTest, AViewOfAValueTheRunMadeReadsThatValuesBlocks) {
  Tensor x = random_tensor({8, 300}, 9);
  auto fn = [&](const std::vector<Tensor>& a) {
    Tensor flat = ops::reshape(ops::square(a[0]), {2400});
    return std::vector<Tensor>{ops::sqrt(ops::abs(flat))};
  };
  jit::Graph g = trace({x}, fn);
  EXPECT_EQ(jit::fuse_elementwise(g), 3);
  EXPECT_EQ(g.nodes[0].internal.size(), 2u);
  jit::Executable exe(std::move(g));
  EXPECT_TRUE(same_bits(exe.run(std::vector<Tensor>{x})[0], fn({x})[0]));
}

TEST(JitMemoryPlanTest, BuffersShareBytesOnlyWhenTheirLivesDoNotOverlap) {
  Tensor x = random_tensor({256}, 10);
  jit::Graph g = trace({x}, [&](const std::vector<Tensor>& a) {
    Tensor t1 = ops::exp(a[0]);
    Tensor t2 = ops::matmul(ops::reshape(t1, {16, 16}), ops::reshape(t1, {16, 16}));  // t1 dies here
    Tensor t3 = ops::matmul(t2, t2);  // may reuse t1's bytes, not t2's
    return std::vector<Tensor>{ops::sum(t3)};
  });
  const jit::MemoryPlan plan = jit::plan_memory(g);
  std::vector<int> intermediates;
  for (size_t b = 0; b < g.buffers.size(); ++b) {
    if (g.buffers[b].kind == jit::BufferKind::kIntermediate) intermediates.push_back(static_cast<int>(b));
  }
  ASSERT_EQ(intermediates.size(), 4u);  // t1, t2, t3, the sum
  const size_t t1 = plan.offsets[intermediates[0]], t2 = plan.offsets[intermediates[1]],
               t3 = plan.offsets[intermediates[2]];
  EXPECT_NE(t1, t2);
  EXPECT_NE(t2, t3);
  EXPECT_EQ(t3, t1);  // t1's life ended before t3's began: the same 1 KiB
  EXPECT_LT(plan.arena_bytes, plan.unshared_bytes);
  jit::Executable exe(std::move(g));
  EXPECT_TRUE(same_bits(exe.run(std::vector<Tensor>{x})[0],
                        ops::sum(ops::matmul(ops::matmul(ops::reshape(ops::exp(x), {16, 16}), ops::reshape(ops::exp(x), {16, 16})),
                                             ops::matmul(ops::reshape(ops::exp(x), {16, 16}), ops::reshape(ops::exp(x), {16, 16}))))));
}

}  // namespace
}  // namespace chorus
