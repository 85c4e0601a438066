#include "chorus/ops/reduction.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/backend/cpu/reduce_kernels.h"
#include "chorus/ops/ops.h"
#include "tests/ops/reduction_reference.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;
using testing::Ref;
using testing::reference_reduce;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Runs `fn` with the calling thread's intra-op budget set to `threads`, then restores it.
template <class Fn>
auto with_threads(int threads, Fn&& fn) {
  const int saved = backend::cpu::intra_op_threads();
  backend::cpu::set_intra_op_threads(threads);
  auto result = fn();
  backend::cpu::set_intra_op_threads(saved);
  return result;
}

Tensor run(Ref kind, const Tensor& x, const ops::Axes& axes, bool keepdims) {
  switch (kind) {
    case Ref::kSum: return ops::sum(x, axes, keepdims);
    case Ref::kMean: return ops::mean(x, axes, keepdims);
    case Ref::kMax: return ops::max(x, axes, keepdims);
    case Ref::kMin: return ops::min(x, axes, keepdims);
    default: return ops::logsumexp(x, axes, keepdims);
  }
}

// Values 0.1 * (a shuffled 0..n-1): no two within 0.1, so max/min have no near-ties.
Tensor distinct_values(const Shape& shape, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>(i) - 1.f;
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return from_values(v, shape);
}

struct AxesCase {
  ops::Axes axes;
  std::vector<int> resolved;
};

std::vector<AxesCase> rank3_cases() {
  return {{ops::Axes(), {0, 1, 2}},         {ops::Axes(0), {0}},          {ops::Axes(1), {1}},
          {ops::Axes(2), {2}},              {ops::Axes({0, 1}), {0, 1}},  {ops::Axes({0, 2}), {0, 2}},
          {ops::Axes({1, 2}), {1, 2}},      {ops::Axes({0, 1, 2}), {0, 1, 2}}, {ops::Axes(-1), {2}},
          {ops::Axes({-3, -1}), {0, 2}},    {ops::Axes({2, 0}), {0, 2}},  {ops::Axes(std::vector<int>{}), {}}};
}

TEST(ReductionTest, EveryAxisCombinationOfRank3MatchesTheReference) {
  for (const Shape& shape : {Shape{7, 5, 9}, Shape{3, 1, 1023}, Shape{1, 7, 1}}) {
    const Tensor x = random_tensor(shape, 11);
    for (const AxesCase& c : rank3_cases()) {
      for (bool keepdims : {false, true}) {
        for (Ref kind : {Ref::kSum, Ref::kMean, Ref::kMax, Ref::kMin}) {
          SCOPED_TRACE(::testing::Message() << shape.to_string() << " axes " << ::testing::PrintToString(c.resolved)
                                            << " keepdims " << keepdims << " kind " << static_cast<int>(kind));
          EXPECT_TRUE(tensors_near(run(kind, x, c.axes, keepdims), reference_reduce(x, c.resolved, kind, keepdims)));
        }
      }
    }
  }
}

TEST(ReductionTest, OddLengthsAndTheThreadedPathMatchTheReference) {
  for (int64_t n : {1, 7, 1023, 2049, 100003, (1 << 20) + 3}) {
    SCOPED_TRACE(n);
    const Tensor x = random_tensor({n}, 5);
    const double atol = 1e-6 * std::sqrt(static_cast<double>(n));
    EXPECT_TRUE(tensors_near(ops::sum(x), reference_reduce(x, {0}, Ref::kSum, false), atol, 1e-5));
    EXPECT_TRUE(tensors_near(ops::mean(x), reference_reduce(x, {0}, Ref::kMean, false), 1e-6, 1e-5));
    EXPECT_TRUE(tensors_near(ops::max(x), reference_reduce(x, {0}, Ref::kMax, false), 0, 0));
    EXPECT_TRUE(tensors_near(ops::min(x), reference_reduce(x, {0}, Ref::kMin, false), 0, 0));
  }
}

// Shapes that take each parallel layout: whole rows, rows cut into chunks, 64-column
// blocks, and columns cut into row chunks.
const std::vector<std::pair<Shape, int>>& parallel_layouts() {
  static const std::vector<std::pair<Shape, int>> cases = {
      {{3, 100003}, 1}, {{100003, 3}, 0}, {{2, 300, 129}, 1}, {{129, 1000}, 0}, {{1000, 129}, 1}, {{5001, 65}, 0}};
  return cases;
}

TEST(ReductionTest, LargeShapesMatchTheReferenceInEveryParallelLayout) {
  for (const auto& [shape, axis] : parallel_layouts()) {
    SCOPED_TRACE(shape.to_string());
    const Tensor x = random_tensor(shape, 21);
    EXPECT_TRUE(tensors_near(ops::sum(x, axis), reference_reduce(x, {axis}, Ref::kSum, false), 2e-4, 1e-5));
    EXPECT_TRUE(tensors_near(ops::max(x, axis), reference_reduce(x, {axis}, Ref::kMax, false), 0, 0));
    EXPECT_TRUE(tensors_near(ops::min(x, axis), reference_reduce(x, {axis}, Ref::kMin, false), 0, 0));
  }
}

TEST(ReductionTest, ThreadCountDoesNotChangeTheBits) {
  // Not a structured binding: the lambdas below capture axis, which clang 14 (scripts/sanitize)
  // does not allow for one.
  for (const auto& layout : parallel_layouts()) {
    const Shape& shape = layout.first;
    const int axis = layout.second;
    SCOPED_TRACE(shape.to_string());
    const Tensor x = random_tensor(shape, 31);
    for (auto op : {&ops::sum, &ops::max, &ops::min, &ops::mean}) {
      const Tensor one = with_threads(1, [&] { return op(x, axis, false); });
      const Tensor two = with_threads(2, [&] { return op(x, axis, false); });
      const Tensor three = with_threads(3, [&] { return op(x, axis, false); });
      EXPECT_TRUE(same_bits(one, two));
      EXPECT_TRUE(same_bits(one, three));
    }
    const Tensor all1 = with_threads(1, [&] { return ops::sum(x); });
    const Tensor all2 = with_threads(2, [&] { return ops::sum(x); });
    EXPECT_TRUE(same_bits(all1, all2));
  }
}

TEST(ReductionTest, EveryInstructionSetGivesTheSameSumBits) {
  using backend::cpu::Isa;
  using backend::cpu::ReduceKind;
  const int best = static_cast<int>(backend::cpu::active_isa());
  for (const auto& [outer, reduced, inner] : std::vector<std::array<int64_t, 3>>{
           {1, 100003, 1}, {5, 4099, 1}, {3, 1027, 7}, {2, 333, 131}, {1, 70001, 3}}) {
    const Tensor x = random_tensor({outer * reduced * inner}, 41);
    const Tensor xb = random_tensor({outer * reduced * inner}, 41, -1, 1, kBFloat16);
    for (ReduceKind kind : {ReduceKind::kSum, ReduceKind::kMax, ReduceKind::kMin}) {
      std::vector<float> base(static_cast<size_t>(outer * inner)), other(base.size());
      std::vector<float> base_b(base.size()), other_b(base.size());
      backend::cpu::reduce(kind, x.data<float>(), base.data(), outer, reduced, inner, Isa::kBaseline);
      backend::cpu::reduce(kind, xb.data<bfloat16>(), base_b.data(), outer, reduced, inner, Isa::kBaseline);
      for (int isa = 1; isa <= best; ++isa) {
        SCOPED_TRACE(::testing::Message() << "isa " << isa << " kind " << static_cast<int>(kind) << " inner " << inner);
        backend::cpu::reduce(kind, x.data<float>(), other.data(), outer, reduced, inner, static_cast<Isa>(isa));
        backend::cpu::reduce(kind, xb.data<bfloat16>(), other_b.data(), outer, reduced, inner,
                             static_cast<Isa>(isa));
        EXPECT_EQ(std::memcmp(base.data(), other.data(), base.size() * 4), 0);
        EXPECT_EQ(std::memcmp(base_b.data(), other_b.data(), base.size() * 4), 0);
      }
    }
  }
}

// The documented order of a short row's sum (reduce_kernels_isa.h, kShortRow): 16 lanes
// summed in order, +0 past the end, then the halving tree 8, 4, 2, 1.
float short_row_sum(const float* x, int64_t n) {
  float lanes[16];
  for (int64_t l = 0; l < 16; ++l) {
    lanes[l] = l < n ? x[l] : 0.f;
    for (int64_t k = l + 16; k < ((n + 15) / 16) * 16; k += 16) lanes[l] += k < n ? x[k] : 0.f;
  }
  for (int w = 8; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  return lanes[0];
}

TEST(ReductionTest, ShortRowsSumInTheDocumentedOrderOnEveryInstructionSet) {
  using backend::cpu::Isa;
  const int best = static_cast<int>(backend::cpu::active_isa());
  for (int64_t n : {1, 2, 3, 7, 15, 16, 17, 31, 32, 33, 48, 63}) {
    for (int64_t rows : {1, 5, 16, 17, 40}) {
      SCOPED_TRACE(::testing::Message() << "rows " << rows << " n " << n);
      // Mixed magnitudes, so a different order of adds would show in the bits.
      Tensor x = random_tensor({rows, n}, 61);
      float* v = x.data<float>();
      for (int64_t i = 0; i < x.numel(); i += 3) v[i] *= 1e4f;
      std::vector<float> expected(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) expected[static_cast<size_t>(r)] = short_row_sum(v + r * n, n);
      for (int isa = 0; isa <= best; ++isa) {
        std::vector<float> got(static_cast<size_t>(rows));
        backend::cpu::reduce(backend::cpu::ReduceKind::kSum, v, got.data(), rows, n, 1, static_cast<Isa>(isa));
        EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * 4), 0) << "isa " << isa;
      }
      const Tensor op = ops::sum(x, -1);
      EXPECT_EQ(std::memcmp(op.data<float>(), expected.data(), expected.size() * 4), 0);
      const Tensor mean = ops::mean(x, -1);
      const auto scale = static_cast<float>(1.0 / static_cast<double>(n));  // as mean() rounds 1 / count
      for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(mean.data<float>()[r], expected[static_cast<size_t>(r)] * scale);
    }
  }
}

TEST(ReductionTest, ShortRowsPropagateNaNAndInfinity) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v(3 * 32, 1.f);
  v[5] = kNaN;           // row 0
  v[32 + 31] = inf;      // row 1
  v[64] = inf;           // row 2: inf - inf
  v[64 + 20] = -inf;
  const Tensor sums = ops::sum(from_values(v, {3, 32}), 1);
  EXPECT_TRUE(std::isnan(sums.data<float>()[0]));
  EXPECT_EQ(sums.data<float>()[1], inf);
  EXPECT_TRUE(std::isnan(sums.data<float>()[2]));
}

TEST(ReductionTest, LongSumsArePairwiseAccurate) {
  // Naive float accumulation of 4M values in [0, 1) is off by ~1e-4 relative.
  const Tensor x = random_tensor({1 << 22}, 51, 0, 1);
  const double exact = reference_reduce(x, {0}, Ref::kSum, false).item<double>();
  EXPECT_LT(std::abs(ops::sum(x).item<double>() - exact) / exact, 1e-6);
  const Tensor columns = x.view({1 << 16, 64});
  const Tensor col_sums = ops::sum(columns, 0);
  const Tensor ref = reference_reduce(columns, {0}, Ref::kSum, false);
  EXPECT_TRUE(tensors_near(col_sums, ref, 0, 1e-6));
}

TEST(ReductionTest, BFloat16AccumulatesInFloat32) {
  // In bfloat16, 256 + 1 rounds back to 256: a bfloat16 accumulator stalls there.
  const Tensor x = ones({4096}, kBFloat16);
  const Tensor s = ops::sum(x);
  EXPECT_EQ(s.dtype(), kBFloat16);
  EXPECT_EQ(s.item<float>(), 4096.f);
  const Tensor r = random_tensor({33, 1023}, 61, -1, 1, kBFloat16);
  for (int axis : {0, 1}) {
    EXPECT_TRUE(tensors_near(ops::sum(r, axis), reference_reduce(r, {axis}, Ref::kSum, false), 1e-2, 8e-3));
    EXPECT_TRUE(tensors_near(ops::mean(r, axis), reference_reduce(r, {axis}, Ref::kMean, false), 1e-3, 8e-3));
    EXPECT_TRUE(tensors_near(ops::max(r, axis), reference_reduce(r, {axis}, Ref::kMax, false), 0, 0));
    EXPECT_TRUE(tensors_near(ops::min(r, axis), reference_reduce(r, {axis}, Ref::kMin, false), 0, 0));
  }
  EXPECT_TRUE(tensors_near(ops::sum(r, {0, 1}), reference_reduce(r, {0, 1}, Ref::kSum, false), 0.2, 8e-3));
}

TEST(ReductionTest, IntegerReductionsAreExactAndSumsWrap) {
  std::vector<int32_t> v32(7 * 1023);
  std::vector<int64_t> v64(v32.size());
  for (size_t i = 0; i < v32.size(); ++i) {
    v32[i] = static_cast<int32_t>((i * 7919) % 2001) - 1000;
    v64[i] = static_cast<int64_t>(v32[i]) * 3000000000LL;
  }
  // Exact reference in int64 (the float reference would round).
  auto check = [](const Tensor& x, int axis) {
    const auto v = x.to_vector<int64_t>();
    const int64_t rows = x.dim(0), cols = x.dim(1);
    const int64_t outer = axis == 0 ? cols : rows, n = axis == 0 ? rows : cols;
    std::vector<int64_t> s(outer, 0), mx(outer, INT64_MIN), mn(outer, INT64_MAX);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t r = 0; r < n; ++r) {
        const int64_t a = axis == 0 ? v[r * cols + o] : v[o * cols + r];
        s[o] += a;
        mx[o] = std::max(mx[o], a);
        mn[o] = std::min(mn[o], a);
      }
    }
    EXPECT_EQ(ops::sum(x, axis).dtype(), x.dtype());
    EXPECT_EQ(ops::sum(x, axis).to_vector<int64_t>(), s);
    EXPECT_EQ(ops::max(x, axis).to_vector<int64_t>(), mx);
    EXPECT_EQ(ops::min(x, axis).to_vector<int64_t>(), mn);
  };
  for (const Tensor& x : {from_values(v32, {7, 1023}), from_values(v64, {7, 1023})}) {
    check(x, 0);
    check(x, 1);
  }
  const Tensor big = from_values<int32_t>({std::numeric_limits<int32_t>::max(), 1});
  EXPECT_EQ(ops::sum(big).item<int32_t>(), std::numeric_limits<int32_t>::min());
}

TEST(ReductionTest, MaxAndMinPropagateNaN) {
  for (int64_t n : {7, 1023, 300001}) {
    Tensor x = random_tensor({2, n}, 71);
    x.data<float>()[n + n / 2] = kNaN;  // row 1 only
    for (auto op : {&ops::max, &ops::min}) {
      const auto r = op(x, 1, false).to_vector<float>();
      EXPECT_FALSE(std::isnan(r[0]));
      EXPECT_TRUE(std::isnan(r[1]));
      const auto c = op(x.view({n, 2}), 0, false).to_vector<float>();  // the NaN is in column (n + n/2) % 2
      EXPECT_TRUE(std::isnan(c[static_cast<size_t>((n + n / 2) % 2)]));
      EXPECT_FALSE(std::isnan(c[static_cast<size_t>(1 - (n + n / 2) % 2)]));
    }
  }
}

TEST(ReductionTest, EmptyAxes) {
  const Tensor x = zeros({0, 3});
  EXPECT_TRUE(tensors_near(ops::sum(x, 0), zeros({3})));
  EXPECT_TRUE(std::isnan(ops::mean(x, 0).to_vector<float>()[1]));
  EXPECT_EQ(ops::sum(x, 1).shape(), Shape({0}));
  EXPECT_EQ(ops::max(x, 1).shape(), Shape({0}));
  EXPECT_EQ(ops::sum(zeros({0}, kInt32)).item<int32_t>(), 0);
  EXPECT_THAT([&] { ops::max(x, 0); },
              ThrowsMessage<ValueError>(HasSubstr("max: cannot reduce an empty axis (input shape (0, 3))")));
  EXPECT_THAT([&] { ops::min(x); }, ThrowsMessage<ValueError>(HasSubstr("min: cannot reduce an empty axis")));
  EXPECT_THAT([&] { ops::argmax(x, 0); }, ThrowsMessage<ValueError>(HasSubstr("argmax: cannot reduce an empty axis")));
}

TEST(ReductionTest, ViewsAndScalars) {
  const Tensor big = random_tensor({11, 6, 5}, 81);
  const Tensor slice = big.first_axis_slice(3, 10);
  EXPECT_TRUE(tensors_near(ops::sum(slice, {0, 2}), reference_reduce(slice, {0, 2}, Ref::kSum, false)));
  EXPECT_TRUE(tensors_near(ops::max(slice.view({7, 30}), 1), reference_reduce(slice.view({7, 30}), {1}, Ref::kMax, false)));
  const Tensor s = scalar(2.5);
  const Tensor r = ops::sum(s);
  EXPECT_EQ(r.shape(), Shape());
  EXPECT_EQ(r.item<float>(), 2.5f);
  EXPECT_FALSE(r.shares_storage(s));
  const Tensor k = ops::sum(random_tensor({2, 3}, 1), ops::Axes(std::vector<int>{}), true);
  EXPECT_EQ(k.shape(), Shape({2, 3}));
}

TEST(ReductionTest, BadInputsNameTheOp) {
  const Tensor x = random_tensor({2, 3, 4}, 1);
  EXPECT_THAT([&] { ops::sum(x, 3); },
              ThrowsMessage<IndexError>(HasSubstr("sum: axis 3 is out of range for shape (2, 3, 4)")));
  EXPECT_THAT([&] { ops::max(x, {0, -3}); },
              ThrowsMessage<ValueError>(HasSubstr("max: repeated axis in the axes for shape (2, 3, 4)")));
  EXPECT_THAT([&] { ops::mean(zeros({3}, kInt32)); },
              ThrowsMessage<DTypeError>(HasSubstr("mean: expected a floating dtype (float32 or bfloat16), got int32")));
  EXPECT_THAT([&] { ops::sum(zeros({3}, kBool)); },
              ThrowsMessage<DTypeError>(HasSubstr("sum: expected a numeric dtype (float32, bfloat16, int32 or int64), got bool")));
  EXPECT_THAT([&] { ops::argmax(x, -4); }, ThrowsMessage<IndexError>(HasSubstr("argmax: axis -4 is out of range")));
}

TEST(ArgMaxTest, MatchesTheReferenceOnEveryAxis) {
  const Tensor x = random_tensor({7, 13, 1023}, 91);
  for (int axis : {0, 1, 2, -1}) {
    const int a = axis < 0 ? axis + 3 : axis;
    const Tensor r = ops::argmax(x, axis);
    EXPECT_EQ(r.dtype(), kInt64);
    EXPECT_TRUE(tensors_near(r, reference_reduce(x, {a}, Ref::kArgMax, false), 0, 0));
    EXPECT_EQ(ops::argmax(x, axis, true).shape(), reference_reduce(x, {a}, Ref::kArgMax, true).shape());
  }
  const Tensor big = random_tensor({300, 1001}, 92);
  EXPECT_TRUE(tensors_near(ops::argmax(big, 0), reference_reduce(big, {0}, Ref::kArgMax, false), 0, 0));
}

TEST(ArgMaxTest, TiesGoToTheFirstAndNaNWins) {
  EXPECT_EQ(ops::argmax(from_values({1.f, 3.f, 3.f, 2.f})).item<int64_t>(), 1);
  EXPECT_EQ(ops::argmax(from_values({1.f, kNaN, 3.f, kNaN})).item<int64_t>(), 1);
  EXPECT_EQ(ops::argmax(from_values<int32_t>({-5, 9, 9}), 0).item<int64_t>(), 1);
  EXPECT_EQ(ops::argmax(from_values<int64_t>({4, 2, 8}, {3, 1}), 0).to_vector<int64_t>(), std::vector<int64_t>{2});
  const Tensor b = random_tensor({5, 9}, 93, -1, 1, kBFloat16);
  EXPECT_TRUE(tensors_near(ops::argmax(b, 1), reference_reduce(b, {1}, Ref::kArgMax, false), 0, 0));
}

TEST(ArgMaxTest, RowKernelsOfEveryInstructionSetTakeTheFirstLargestOrTheFirstNaN) {
  using backend::cpu::Isa;
  std::mt19937 rng(94);
  for (int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 64, 100, 1001, 33282}) {
    const int64_t rows = 12;
    // Few distinct values, so rows hold ties; row 1 its largest value twice, late rows
    // a NaN early, in the middle or in the tail, or infinities.
    std::vector<float> x(static_cast<size_t>(rows * n));
    for (float& v : x) v = static_cast<float>(std::uniform_int_distribution<int>(-20, 20)(rng));
    auto at = [&](int64_t r, int64_t c) -> float& { return x[static_cast<size_t>(r * n + std::min(c, n - 1))]; };
    at(1, n / 3) = at(1, n / 2) = 50.f;
    at(2, n - 1) = std::numeric_limits<float>::infinity();
    at(3, 0) = kNaN;
    at(4, n / 2) = kNaN;
    at(4, n - 1) = kNaN;
    at(5, n - 1) = kNaN;
    at(6, 0) = -std::numeric_limits<float>::infinity();
    std::vector<int64_t> expected(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < n; ++c) {
        const float v = at(r, c), b = at(r, best);
        if (b != b) break;
        if (v != v || v > b) best = c;
      }
      expected[static_cast<size_t>(r)] = best;
    }
    std::vector<bfloat16> xb(x.size());
    for (size_t i = 0; i < x.size(); ++i) xb[i] = bfloat16(x[i]);  // these values are exact in bfloat16
    for (int isa = 0; isa <= static_cast<int>(backend::cpu::active_isa()); ++isa) {
      SCOPED_TRACE(::testing::Message() << "isa " << isa << " n " << n);
      std::vector<int64_t> got(static_cast<size_t>(rows)), got_b(static_cast<size_t>(rows));
      backend::cpu::argmax(x.data(), got.data(), rows, n, 1, static_cast<Isa>(isa));
      backend::cpu::argmax(xb.data(), got_b.data(), rows, n, 1, static_cast<Isa>(isa));
      EXPECT_EQ(got, expected);
      EXPECT_EQ(got_b, expected);
    }
  }
}

TEST(BroadcastTest, BroadcastToAndSumToMatchTheReference) {
  const Tensor x = random_tensor({3, 1, 5}, 101);
  const Tensor b = ops::broadcast_to(x, {2, 3, 4, 5});
  ASSERT_EQ(b.shape(), Shape({2, 3, 4, 5}));
  const auto vx = x.to_vector<float>(), vb = b.to_vector<float>();
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = 0; k < 4; ++k) {
        for (int64_t l = 0; l < 5; ++l) ASSERT_EQ(vb[((i * 3 + j) * 4 + k) * 5 + l], vx[j * 5 + l]);
      }
    }
  }
  EXPECT_TRUE(tensors_near(ops::sum_to(b, {3, 1, 5}), reference_reduce(b, {0, 2}, Ref::kSum, true).view({3, 1, 5})));
  EXPECT_TRUE(tensors_near(ops::sum_to(b, {5}), reference_reduce(b.view({24, 5}), {0}, Ref::kSum, false)));
  EXPECT_TRUE(tensors_near(ops::sum_to(b, {}), reference_reduce(b, {0, 1, 2, 3}, Ref::kSum, false)));
  // Other dtypes, and a large copy through the threaded path.
  const Tensor i = ops::broadcast_to(from_values<int64_t>({7, -8}, {2, 1}), {2, 3});
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 7, -8, -8, -8}));
  const Tensor bf = ops::broadcast_to(random_tensor({1, 1023}, 102, -1, 1, kBFloat16), {301, 1023});
  EXPECT_TRUE(tensors_near(ops::sum_to(bf, {1, 1023}), reference_reduce(bf, {0}, Ref::kSum, true), 0.1, 8e-3));
  const Tensor column = ops::broadcast_to(random_tensor({1023, 1}, 103), {1023, 301});
  EXPECT_TRUE(tensors_near(ops::max(column, 1), ops::min(column, 1), 0, 0));
}

TEST(BroadcastTest, RowsToShortRowsCopyBitsOnEveryInstructionSet) {
  // (rows, 1) -> (rows, n) takes the per-row splat; NaN payloads and int32 come through as bits.
  for (int64_t n : {2, 3, 16, 32, 33, 100}) {
    Tensor x = random_tensor({37, 1}, 105);
    uint32_t nan_bits = 0x7fc01234u;
    std::memcpy(x.data<float>() + 4, &nan_bits, 4);
    const Tensor b = ops::broadcast_to(x, {37, n});
    const Tensor b3 = ops::broadcast_to(x.view({37, 1, 1}), {37, 2, n});
    for (int64_t r = 0; r < 37; ++r) {
      for (int64_t j = 0; j < 2 * n; ++j) {
        ASSERT_EQ(std::memcmp(b3.data<float>() + r * 2 * n + j, x.data<float>() + r, 4), 0);
        if (j < n) {
          ASSERT_EQ(std::memcmp(b.data<float>() + r * n + j, x.data<float>() + r, 4), 0);
        }
      }
    }
    const Tensor ints = ops::broadcast_to(from_values<int32_t>({5, -6, 7}, {3, 1}), {3, n});
    EXPECT_EQ(ints.to_vector<int32_t>()[static_cast<size_t>(2 * n - 1)], -6);
    EXPECT_EQ(ints.to_vector<int32_t>()[static_cast<size_t>(3 * n - 1)], 7);
    const int best = static_cast<int>(backend::cpu::active_isa());
    for (int isa = 0; isa <= best; ++isa) {
      std::vector<uint32_t> out(static_cast<size_t>(37 * n));
      backend::cpu::reduce_kernel_table(static_cast<backend::cpu::Isa>(isa))
          .broadcast_rows32(reinterpret_cast<const uint32_t*>(x.data<float>()), out.data(), 37, n);
      EXPECT_EQ(std::memcmp(out.data(), b.data<float>(), out.size() * 4), 0) << "isa " << isa;
    }
  }
}

TEST(BroadcastTest, MatchingShapesGiveFreshTensors) {
  const Tensor x = random_tensor({2, 3}, 104);
  const Tensor s = ops::sum_to(x, {2, 3}), b = ops::broadcast_to(x, {2, 3});
  EXPECT_FALSE(s.same(x));
  EXPECT_FALSE(b.same(x));
  EXPECT_TRUE(tensors_near(s, x, 0, 0));
  EXPECT_TRUE(tensors_near(b, x, 0, 0));
}

TEST(BroadcastTest, ShapesThatDoNotBroadcastAreErrors) {
  const Tensor x = random_tensor({2, 3}, 105);
  EXPECT_THAT([&] { ops::broadcast_to(x, {4, 3}); },
              ThrowsMessage<ShapeError>(HasSubstr("broadcast_to: cannot broadcast shape (2, 3) to (4, 3)")));
  EXPECT_THAT([&] { ops::broadcast_to(x, {3}); },
              ThrowsMessage<ShapeError>(HasSubstr("broadcast_to: cannot broadcast shape (2, 3) to (3,)")));
  EXPECT_THAT([&] { ops::sum_to(x, {4}); },
              ThrowsMessage<ShapeError>(HasSubstr("sum_to: shape (4,) does not broadcast to the input shape (2, 3)")));
}

TEST(ReductionGradientTest, SumMeanMaxMinMatchNumericalGradients) {
  const Tensor x = random_tensor({3, 4, 5}, 111);
  expect_gradients_match([](const auto& in) { return ops::sum(in[0], {0, 2}); }, {x.clone()});
  expect_gradients_match([](const auto& in) { return ops::sum(in[0], -1, true); }, {x.clone()});
  expect_gradients_match([](const auto& in) { return ops::sum(in[0]); }, {x.clone()});
  expect_gradients_match([](const auto& in) { return ops::mean(in[0], 1, true); }, {x.clone()});
  expect_gradients_match([](const auto& in) { return ops::mean(in[0], {0, 2}); }, {x.clone()});
  const Tensor d = distinct_values({3, 4, 5}, 7);
  expect_gradients_match([](const auto& in) { return ops::max(in[0], {0, 2}); }, {d.clone()});
  expect_gradients_match([](const auto& in) { return ops::max(in[0], 1, true); }, {d.clone()});
  expect_gradients_match([](const auto& in) { return ops::min(in[0]); }, {d.clone()});
  expect_gradients_match([](const auto& in) { return ops::min(in[0], -1); }, {d.clone()});
}

TEST(ReductionGradientTest, BroadcastPairMatchesNumericalGradients) {
  expect_gradients_match([](const auto& in) { return ops::broadcast_to(in[0], {2, 3, 4}); },
                         {random_tensor({3, 1}, 112)});
  expect_gradients_match([](const auto& in) { return ops::sum_to(in[0], {3, 1}); }, {random_tensor({2, 3, 4}, 113)});
  expect_gradients_match([](const auto& in) { return ops::sum_to(in[0], {4}); }, {random_tensor({3, 4}, 114)});
}

TEST(ReductionGradientTest, MaxSplitsTheGradientEvenlyAmongTies) {
  const Tensor x = from_values({1.f, 3.f, 3.f, 2.f, 5.f, 5.f, 5.f, 0.f}, {2, 4});
  autograd::GradientTape tape;
  tape.watch(x);
  const Tensor y = ops::max(x, 1);
  const auto g = tape.gradient(y, {x});
  const float third = 1.f / 3.f;
  EXPECT_TRUE(tensors_near(g[0], from_values({0.f, .5f, .5f, 0.f, third, third, third, 0.f}, {2, 4})));
}

TEST(ReductionGradientTest, BFloat16GradientsKeepTheDtype) {
  const Tensor x = random_tensor({4, 6}, 115, -1, 1, kBFloat16);
  for (auto op : {&ops::mean, &ops::max, &ops::sum}) {
    autograd::GradientTape tape;
    tape.watch(x);
    const auto g = tape.gradient(op(x, 0, true), {x});
    ASSERT_EQ(g[0].dtype(), kBFloat16);
    EXPECT_EQ(g[0].shape(), x.shape());
    const auto gv = g[0].to_vector<float>();
    EXPECT_NEAR(std::accumulate(gv.begin(), gv.end(), 0.0), op == &ops::sum ? 24.0 : 6.0, 0.02);
  }
}

}  // namespace
}  // namespace chorus
