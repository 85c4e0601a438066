#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/ops/reduction.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

template <class I>
Tensor random_indices(const Shape& shape, int64_t bound, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<I> v(static_cast<size_t>(shape.numel()));
  for (I& i : v) i = static_cast<I>(gen() % static_cast<uint32_t>(bound));
  return from_values(v, shape);
}

// take(x, indices, axis) by the definition, elementwise, in double.
Tensor reference_take(const Tensor& x, const Tensor& indices, int axis) {
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (int d = axis + 1; d < s.rank(); ++d) inner *= s[d];
  const auto v = x.to_vector<double>();
  const auto idx = indices.to_vector<int64_t>();
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t m : idx) {
      for (int64_t i = 0; i < inner; ++i) out.push_back(static_cast<float>(v[static_cast<size_t>((o * s[axis] + m) * inner + i)]));
    }
  }
  Shape shape;
  for (int d = 0; d < axis; ++d) shape.push_back(s[d]);
  for (int64_t d : indices.shape().dims()) shape.push_back(d);
  for (int d = axis + 1; d < s.rank(); ++d) shape.push_back(s[d]);
  return from_values(out, shape);
}

TEST(TakeTest, MatchesTheReferenceForEveryAxisAndIndexShape) {
  const Tensor x = random_tensor({7, 5, 3}, 301);
  for (int axis : {0, 1, 2, -1}) {
    const int a = axis < 0 ? axis + 3 : axis;
    const int64_t n = x.dim(a);
    for (const Tensor& idx : {random_indices<int32_t>({4}, n, 1), random_indices<int64_t>({2, 3}, n, 2),
                              from_values<int64_t>({n - 1}, Shape{}), random_indices<int64_t>({0}, n, 3)}) {
      SCOPED_TRACE(::testing::Message() << "axis " << axis << " indices " << idx.shape().to_string());
      EXPECT_TRUE(tensors_near(ops::take(x, idx, axis), reference_take(x, idx, a), 0, 0));
    }
  }
}

TEST(TakeTest, EmbeddingLookupOnViewsAndEveryDtype) {
  const Tensor table = random_tensor({1700, 65}, 302).first_axis_slice(17, 1700);  // (1683, 65) view
  const Tensor idx = random_indices<int32_t>({64, 129}, 1683, 4);
  EXPECT_TRUE(tensors_near(ops::take(table, idx), reference_take(table, idx, 0), 0, 0));
  const Tensor bf = random_tensor({9, 7}, 303, -1, 1, kBFloat16);
  const Tensor small = random_indices<int64_t>({1023}, 9, 5);
  EXPECT_TRUE(tensors_near(ops::take(bf, small), reference_take(bf, small, 0), 0, 0));
  const Tensor ints = from_values<int64_t>({10, 20, 30, 40, 50, 60}, {2, 3});
  EXPECT_EQ(ops::take(ints, from_values<int32_t>({2, 0, 2}), 1).to_vector<int64_t>(),
            (std::vector<int64_t>{30, 10, 30, 60, 40, 60}));
  const Tensor flags = ops::take(from_values<bool>({true, false}), from_values<int32_t>({1, 1, 0}));
  EXPECT_EQ(flags.to_vector<int>(), (std::vector<int>{0, 0, 1}));
}

TEST(TakeTest, BadIndicesAreErrorsNotReads) {
  const Tensor table = zeros({1683, 4});
  std::vector<int64_t> v(20, 5);
  v[17] = 2000;
  EXPECT_THAT([&] { ops::take(table, from_values(v, {4, 5})); },
              ThrowsMessage<IndexError>(HasSubstr("take: index 2000 is out of range [0, 1683) at position 17")));
  EXPECT_THAT([&] { ops::take(table, from_values<int32_t>({0, -1})); },
              ThrowsMessage<IndexError>(HasSubstr("take: index -1 is out of range [0, 1683) at position 1")));
  EXPECT_THAT([&] { ops::take(table, from_values<int32_t>({4}), 1); },
              ThrowsMessage<IndexError>(HasSubstr("take: index 4 is out of range [0, 4) at position 0")));
  EXPECT_THAT([&] { ops::take(table, from_values({1.f})); },
              ThrowsMessage<DTypeError>(HasSubstr("take: expected integer indices (int32 or int64), got float32")));
  EXPECT_THAT([&] { ops::take(table, from_values<int32_t>({0}), 2); },
              ThrowsMessage<IndexError>(HasSubstr("take: axis 2 is out of range for shape (1683, 4)")));
}

TEST(TakeGradientTest, DuplicatesAccumulate) {
  const Tensor dup = from_values<int64_t>({1, 3, 1, 1, 0}, {5});
  expect_gradients_match([&](const auto& in) { return ops::take(in[0], dup); }, {random_tensor({4, 3}, 304)});
  expect_gradients_match([&](const auto& in) { return ops::take(in[0], dup, 1); }, {random_tensor({2, 4, 3}, 305)});
  const Tensor idx2 = from_values<int32_t>({2, 2, 0, 1}, {2, 2});
  expect_gradients_match([&](const auto& in) { return ops::take(in[0], idx2, -1); }, {random_tensor({3, 3}, 306)});
  // Counting: the gradient of sum(take(x, idx)) is how often each row was taken.
  const Tensor x = random_tensor({6, 2}, 307);
  autograd::GradientTape tape;
  tape.watch(x);
  const Tensor g = tape.gradient(ops::sum(ops::take(x, dup)), {x})[0];
  EXPECT_TRUE(tensors_near(g, from_values({1.f, 1.f, 3.f, 3.f, 0.f, 0.f, 1.f, 1.f, 0.f, 0.f, 0.f, 0.f}, {6, 2})));
}

TEST(TakeGradientTest, LargeScatterIsTheSameForAnyThreadCount) {
  const Tensor table = random_tensor({1000, 64}, 308);
  const Tensor idx = random_indices<int64_t>({50000}, 1000, 6);  // ~50 duplicates per row
  const Tensor w = random_tensor({50000, 64}, 309);
  auto grad = [&](int threads) {
    const int saved = backend::cpu::intra_op_threads();
    backend::cpu::set_intra_op_threads(threads);
    autograd::GradientTape tape;
    tape.watch(table);
    const Tensor g = tape.gradient(ops::take(table, idx), {table}, w)[0];
    backend::cpu::set_intra_op_threads(saved);
    return g;
  };
  const Tensor one = grad(1), two = grad(2);
  EXPECT_EQ(std::memcmp(one.raw_data(), two.raw_data(), one.nbytes()), 0);
  // And the sums themselves, in double.
  const auto vi = idx.to_vector<int64_t>();
  const auto vw = w.to_vector<double>();
  std::vector<double> want(1000 * 64, 0.0);
  for (size_t m = 0; m < vi.size(); ++m) {
    for (int j = 0; j < 64; ++j) want[static_cast<size_t>(vi[m] * 64 + j)] += vw[m * 64 + j];
  }
  std::vector<float> wf(want.begin(), want.end());
  EXPECT_TRUE(tensors_near(one, from_values(wf, {1000, 64}), 1e-4, 1e-5));
}

TEST(OneHotTest, ValuesShapesAndDtypes) {
  const Tensor idx = from_values<int32_t>({0, 2, -1, 3, 1, 7}, {2, 3});
  const Tensor y = ops::one_hot(idx, 3);
  EXPECT_EQ(y.shape(), Shape({2, 3, 3}));
  EXPECT_EQ(y.dtype(), kFloat32);
  // Negative and out-of-range indices give all-zero rows.
  EXPECT_EQ(y.to_vector<float>(),
            (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}));
  for (DType dtype : {kBFloat16, kInt32, kInt64, kBool}) {
    EXPECT_EQ(ops::one_hot(idx, 3, dtype).to_vector<float>(), y.to_vector<float>()) << dtype_name(dtype);
  }
  const Tensor big = random_indices<int64_t>({4099}, 1000, 7);
  const Tensor h = ops::one_hot(big, 1000);
  const auto vb = big.to_vector<int64_t>();
  const auto vh = h.to_vector<float>();
  for (size_t i = 0; i < vb.size(); i += 97) {
    EXPECT_EQ(std::accumulate(vh.begin() + static_cast<int64_t>(i) * 1000, vh.begin() + static_cast<int64_t>(i + 1) * 1000, 0.f), 1.f);
    EXPECT_EQ(vh[i * 1000 + static_cast<size_t>(vb[i])], 1.f);
  }
  EXPECT_EQ(ops::one_hot(from_values<int64_t>({1}, Shape{}), 2).to_vector<float>(), (std::vector<float>{0, 1}));
}

TEST(OneHotTest, BadArgumentsAreErrors) {
  EXPECT_THAT([] { ops::one_hot(from_values({1.f}), 3); },
              ThrowsMessage<DTypeError>(HasSubstr("one_hot: expected integer indices (int32 or int64), got float32")));
  EXPECT_THAT([] { ops::one_hot(from_values<int32_t>({1}), 0); },
              ThrowsMessage<ValueError>(HasSubstr("one_hot: expected num_classes >= 1, got 0")));
}

// The k largest of each row by (value descending, index ascending), NaN largest.
std::vector<int64_t> reference_top_k(const std::vector<double>& row, int64_t k) {
  std::vector<int64_t> order(row.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (std::isnan(row[a]) || std::isnan(row[b])) return std::isnan(row[a]) && !std::isnan(row[b]);
    return row[a] > row[b];
  });
  return std::vector<int64_t>(order.begin(), order.begin() + k);
}

TEST(TopKTest, MatchesTheReference) {
  Tensor x = random_tensor({7, 1023}, 310);
  x.data<float>()[5] = x.data<float>()[9];  // a tie in row 0
  x.data<float>()[1023 + 44] = std::numeric_limits<float>::quiet_NaN();
  const auto vx = x.to_vector<double>();
  for (int64_t k : {1, 5, 1023}) {
    const auto [values, indices] = ops::top_k(x, k);
    ASSERT_EQ(values.shape(), Shape({7, k}));
    ASSERT_EQ(indices.dtype(), kInt64);
    const auto vv = values.to_vector<double>();
    const auto vi = indices.to_vector<int64_t>();
    for (int64_t r = 0; r < 7; ++r) {
      const std::vector<double> row(vx.begin() + r * 1023, vx.begin() + (r + 1) * 1023);
      const auto want = reference_top_k(row, k);
      for (int64_t j = 0; j < k; ++j) {
        ASSERT_EQ(vi[r * k + j], want[j]) << "row " << r << " j " << j;
        const double a = vv[r * k + j], b = row[want[j]];
        ASSERT_TRUE(a == b || (std::isnan(a) && std::isnan(b)));
      }
    }
    // Unsorted: the same entries in ascending index order.
    const auto [uv, ui] = ops::top_k(x, k, false);
    const auto vui = ui.to_vector<int64_t>();
    for (int64_t r = 0; r < 7; ++r) {
      std::vector<int64_t> want(vi.begin() + r * k, vi.begin() + (r + 1) * k);
      std::sort(want.begin(), want.end());
      EXPECT_EQ(std::vector<int64_t>(vui.begin() + r * k, vui.begin() + (r + 1) * k), want);
    }
  }
  const auto [tv, ti] = ops::top_k(from_values({1.f, 3.f, 3.f, 2.f}), 2);
  EXPECT_EQ(ti.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));  // ties: lower index first
}

TEST(TopKTest, OtherDtypesAndViews) {
  const auto [iv, ii] = ops::top_k(from_values<int32_t>({4, -1, 9, 4}, {2, 2}), 1);
  EXPECT_EQ(iv.to_vector<int32_t>(), (std::vector<int32_t>{4, 9}));
  EXPECT_EQ(ii.to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  const auto [lv, li] = ops::top_k(from_values<int64_t>({5, 6, 7}), 2);
  EXPECT_EQ(lv.to_vector<int64_t>(), (std::vector<int64_t>{7, 6}));
  const Tensor b = random_tensor({3, 9}, 311, -1, 1, kBFloat16);
  const auto [bv, bi] = ops::top_k(b.first_axis_slice(1, 3), 3);
  EXPECT_EQ(bv.dtype(), kBFloat16);
  const auto vb = b.to_vector<float>();
  const auto vbi = bi.to_vector<int64_t>();
  const auto vbv = bv.to_vector<float>();
  for (int64_t r = 0; r < 2; ++r) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(vbv[r * 3 + j], vb[(r + 1) * 9 + vbi[r * 3 + j]]);
    EXPECT_GE(vbv[r * 3], vbv[r * 3 + 1]);
  }
}

TEST(TopKTest, BadArgumentsAreErrors) {
  const Tensor x = zeros({2, 5});
  EXPECT_THAT([&] { ops::top_k(x, 6); },
              ThrowsMessage<ValueError>(HasSubstr("top_k: expected 1 <= k <= 5 (the last dimension of shape (2, 5)), got k=6")));
  EXPECT_THAT([&] { ops::top_k(x, 0); }, ThrowsMessage<ValueError>(HasSubstr("got k=0")));
  EXPECT_THAT([] { ops::top_k(scalar(1), 1); },
              ThrowsMessage<ShapeError>(HasSubstr("top_k: expected an input of rank >= 1, got shape ()")));
  EXPECT_THAT([] { ops::top_k(zeros({3}, kBool), 1); },
              ThrowsMessage<DTypeError>(HasSubstr("top_k: expected a numeric dtype")));
}

TEST(TopKGradientTest, ScattersToTheChosenPositions) {
  std::vector<float> v(4 * 7);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>((i * 11) % v.size());  // distinct
  expect_gradients_match([](const auto& in) { return ops::top_k(in[0], 3).first; }, {from_values(v, {4, 7})});
  expect_gradients_match([](const auto& in) { return ops::top_k(in[0], 2, false).first; }, {from_values(v, {2, 2, 7})});
}

}  // namespace
}  // namespace chorus
