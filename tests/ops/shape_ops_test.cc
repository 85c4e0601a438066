// Shape ops against plain reference loops that move raw element bytes, for every dtype,
// at odd sizes and on views; round trips; gradients; and every error message.
#include "chorus/ops/shape_ops.h"

#include <cstring>
#include <numeric>

#include "chorus/core/creation.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using namespace testing::test_names;

constexpr DType kShapeOpDTypes[] = {kFloat32, kBFloat16, kInt32, kInt64, kBool, kUInt8};

// Random, never-all-zero values of any dtype.
Tensor random_nonzero_of(const Shape& shape, uint64_t seed, DType dtype = kFloat32) {
  const Tensor f = random_tensor(shape, seed, -100, 100);
  Tensor out = Tensor::empty(shape, dtype);
  const float* src = f.data<float>();
  visit_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    T* dst = out.data<T>();
    for (int64_t i = 0; i < f.numel(); ++i) {
      if constexpr (std::is_same_v<T, bfloat16>) {
        dst[i] = bfloat16(src[i]);
      } else if constexpr (std::is_same_v<T, bool>) {
        dst[i] = src[i] > 0;
      } else if constexpr (std::is_same_v<T, float>) {
        dst[i] = src[i];
      } else if constexpr (std::is_same_v<T, uint8_t>) {
        dst[i] = static_cast<uint8_t>(src[i] + 128);  // 28..228
      } else {
        dst[i] = static_cast<T>(src[i] * 1000);
      }
    }
  });
  return out;
}

std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> index(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

int64_t ravel(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t flat = 0;
  for (int d = 0; d < shape.rank(); ++d) flat = flat * shape[d] + index[d];
  return flat;
}

// out[i] = x[source(index of i)] element by element, by bytes: the reference for every op here.
template <class Source>
Tensor gather_reference(const Shape& out_shape, DType dtype, Source&& source) {
  Tensor out = Tensor::empty(out_shape, dtype);
  const size_t size = dtype_size(dtype);
  for (int64_t i = 0; i < out.numel(); ++i) {
    auto [x, flat] = source(unravel(i, out_shape));
    std::memcpy(static_cast<char*>(out.raw_data()) + i * size, static_cast<const char*>(x->raw_data()) + flat * size,
                size);
  }
  return out;
}

::testing::AssertionResult same_elements(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    return ::testing::AssertionFailure() << a.shape().to_string() << " " << dtype_name(a.dtype()) << " vs "
                                         << b.shape().to_string() << " " << dtype_name(b.dtype());
  }
  if (a.nbytes() != 0 && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0) {
    return ::testing::AssertionFailure() << "elements differ for shape " << a.shape().to_string();
  }
  return ::testing::AssertionSuccess();
}

Tensor reference_transpose(const Tensor& x, const std::vector<int>& perm) {
  Shape out_shape;
  for (int p : perm) out_shape.push_back(x.shape()[p]);
  return gather_reference(out_shape, x.dtype(), [&](const std::vector<int64_t>& index) {
    std::vector<int64_t> in(index.size());
    for (size_t d = 0; d < perm.size(); ++d) in[perm[d]] = index[d];
    return std::pair{&x, ravel(in, x.shape())};
  });
}

Tensor reference_slice(const Tensor& x, const std::vector<int64_t>& start, const Shape& block) {
  return gather_reference(block, x.dtype(), [&](std::vector<int64_t> index) {
    for (size_t d = 0; d < index.size(); ++d) index[d] += start[d];
    return std::pair{&x, ravel(index, x.shape())};
  });
}

Tensor reference_concatenate(const std::vector<Tensor>& xs, int axis) {
  Shape out_shape = xs[0].shape();
  out_shape[axis] = 0;
  for (const Tensor& x : xs) out_shape[axis] += x.shape()[axis];
  return gather_reference(out_shape, xs[0].dtype(), [&](std::vector<int64_t> index) {
    size_t k = 0;
    while (index[axis] >= xs[k].shape()[axis]) index[axis] -= xs[k++].shape()[axis];
    return std::pair{&xs[k], ravel(index, xs[k].shape())};
  });
}

// The next permutation of a rank that is not the identity, for a seed.
std::vector<int> shuffled_axes(int rank, uint64_t seed) {
  std::vector<int> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  const auto r = random_tensor({rank}, seed, 0, 1).to_vector<double>();
  std::sort(perm.begin(), perm.end(), [&](int a, int b) { return r[a] < r[b]; });
  return perm;
}

// --- reshape, expand_dims, squeeze -------------------------------------------------------

TEST(ShapeOpsTest, ReshapeIsAViewAndInfersOneDimension) {
  for (DType dtype : kShapeOpDTypes) {
    const Tensor x = random_nonzero_of({2, 3, 4}, 1, dtype);
    const Tensor y = ops::reshape(x, {4, -1});
    EXPECT_EQ(y.shape(), Shape({4, 6}));
    EXPECT_TRUE(y.shares_storage(x));
    EXPECT_FALSE(y.same(x));
    EXPECT_TRUE(same_elements(y.view(x.shape()), x));
  }
  EXPECT_EQ(ops::reshape(scalar(3), {1, 1, -1}).shape(), Shape({1, 1, 1}));
  EXPECT_EQ(ops::reshape(Tensor::empty({0, 3}), {-1, 3}).shape(), Shape({0, 3}));
  EXPECT_EQ(ops::reshape(Tensor::empty({1, 1}), {}).shape(), Shape{});
}

TEST(ShapeOpsTest, ReshapeErrors) {
  const Tensor x = Tensor::empty({2, 3});
  EXPECT_THAT([&] { ops::reshape(x, {4, -1}); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("reshape: cannot reshape a tensor of shape (2, 3) (6 elements) into shape (4, -1)")));
  EXPECT_THAT([&] { ops::reshape(x, {7}); },
              ThrowsMessage<ShapeError>(HasSubstr("(6 elements) into shape (7,)")));
  EXPECT_THAT([&] { ops::reshape(x, {}); }, ThrowsMessage<ShapeError>(HasSubstr("(6 elements) into shape ()")));
  EXPECT_THAT([&] { ops::reshape(x, {-1, -1}); },
              ThrowsMessage<ValueError>(HasSubstr("reshape: only one dimension can be -1, got shape (-1, -1)")));
  EXPECT_THAT([&] { ops::reshape(x, {-2, -3}); },
              ThrowsMessage<ValueError>(HasSubstr("reshape: dimension -2 is negative in shape (-2, -3)")));
  EXPECT_THAT([&] { ops::reshape(Tensor::empty({0, 3}), {0, -1}); },
              ThrowsMessage<ShapeError>(HasSubstr("shape (0, 3) (0 elements) into shape (0, -1)")));
  EXPECT_THAT([&] { ops::reshape(x, std::vector<int64_t>(9, 1)); },
              ThrowsMessage<ShapeError>(HasSubstr("reshape: shape (1, 1, 1, 1, 1, 1, 1, 1, 1) has rank 9")));
}

TEST(ShapeOpsTest, ExpandDimsAndSqueezeAreViews) {
  const Tensor x = random_nonzero_of({2, 3}, 2, kInt64);
  EXPECT_EQ(ops::expand_dims(x, 0).shape(), Shape({1, 2, 3}));
  EXPECT_EQ(ops::expand_dims(x, 2).shape(), Shape({2, 3, 1}));
  EXPECT_EQ(ops::expand_dims(x, -1).shape(), Shape({2, 3, 1}));
  EXPECT_EQ(ops::expand_dims(x, -3).shape(), Shape({1, 2, 3}));
  EXPECT_EQ(ops::expand_dims(scalar(1), 0).shape(), Shape({1}));
  const Tensor y = ops::expand_dims(ops::expand_dims(x, 1), 0);  // (1, 2, 1, 3)
  EXPECT_TRUE(y.shares_storage(x));
  EXPECT_EQ(ops::squeeze(y).shape(), x.shape());
  EXPECT_EQ(ops::squeeze(y, 2).shape(), Shape({1, 2, 3}));
  EXPECT_EQ(ops::squeeze(y, -4).shape(), Shape({2, 1, 3}));
  EXPECT_TRUE(ops::squeeze(y, 0).shares_storage(x));
  EXPECT_TRUE(same_elements(ops::squeeze(y).view(x.shape()), x));
  EXPECT_EQ(ops::squeeze(Tensor::empty({1, 1})).shape(), Shape{});
}

TEST(ShapeOpsTest, ExpandDimsAndSqueezeErrors) {
  const Tensor x = Tensor::empty({2, 1, 3});
  EXPECT_THAT([&] { ops::expand_dims(x, 4); },
              ThrowsMessage<IndexError>(HasSubstr("expand_dims: axis 4 is out of range [-4, 3] for shape (2, 1, 3)")));
  EXPECT_THAT([&] { ops::expand_dims(x, -5); }, ThrowsMessage<IndexError>(HasSubstr("axis -5 is out of range")));
  EXPECT_THAT([&] { ops::expand_dims(Tensor::empty(Shape(std::vector<int64_t>(8, 1))), 0); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("expand_dims: cannot add an axis to shape (1, 1, 1, 1, 1, 1, 1, 1): rank 8 is the "
                            "maximum")));
  EXPECT_THAT([&] { ops::squeeze(x, 2); },
              ThrowsMessage<ShapeError>(
                  HasSubstr("squeeze: cannot squeeze axis 2 of shape (2, 1, 3): expected size 1, got 3")));
  EXPECT_THAT([&] { ops::squeeze(x, 3); },
              ThrowsMessage<IndexError>(HasSubstr("squeeze: axis 3 is out of range for shape (2, 1, 3)")));
}

// --- transpose ------------------------------------------------------------------------------

TEST(ShapeOpsTest, TransposeMatchesReferenceForEveryRankAndDType) {
  const int64_t sizes[] = {3, 1, 5, 2, 4, 1, 3, 2};  // ranks up to 8, with size-1 axes
  for (int rank = 0; rank <= kMaxRank; ++rank) {
    const Shape shape(std::span<const int64_t>(sizes, static_cast<size_t>(rank)));
    for (DType dtype : kShapeOpDTypes) {
      const Tensor x = random_nonzero_of(shape, 10 + rank, dtype);
      for (uint64_t seed : {1, 2, 3}) {
        const std::vector<int> perm = shuffled_axes(rank, seed * 31 + rank);
        EXPECT_TRUE(same_elements(ops::transpose(x, perm), reference_transpose(x, perm)))
            << "rank " << rank << " " << dtype_name(dtype);
      }
    }
  }
}

TEST(ShapeOpsTest, TransposeTiledPathsAtOddSizes) {
  // 2-D and last-two-axes transposes hit the 4x4 / 8x8 SIMD blocks, the ragged tile edges
  // and (at 1023 x 300) the threaded path.
  const Shape shapes[] = {{1, 7}, {7, 1}, {7, 9}, {33, 65}, {1023, 5}, {5, 1023}, {1023, 300}, {3, 17, 31}};
  for (const Shape& shape : shapes) {
    std::vector<int> perm(static_cast<size_t>(shape.rank()));
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 2], perm.back());
    for (DType dtype : kShapeOpDTypes) {
      const Tensor x = random_nonzero_of(shape, 5, dtype);
      EXPECT_TRUE(same_elements(ops::transpose(x, perm), reference_transpose(x, perm)))
          << shape.to_string() << " " << dtype_name(dtype);
    }
  }
  // An inner-axes permutation that keeps rows contiguous (attention's (B, T, H, D) -> (B, H, T, D)).
  const Tensor qkv = random_nonzero_of({2, 7, 3, 5}, 6);
  EXPECT_TRUE(same_elements(ops::transpose(qkv, {0, 2, 1, 3}), reference_transpose(qkv, {0, 2, 1, 3})));
}

TEST(ShapeOpsTest, TransposeDefaultsNegativeAxesViewsAndRoundTrip) {
  const Tensor big = random_nonzero_of({9, 4, 6}, 7);
  const Tensor x = big.first_axis_slice(2, 7);  // a view with an offset
  EXPECT_TRUE(same_elements(ops::transpose(x), reference_transpose(x, {2, 1, 0})));
  EXPECT_TRUE(same_elements(ops::transpose(x, {-1, 0, -2}), reference_transpose(x, {2, 0, 1})));
  const std::vector<int> perm{1, 2, 0}, inverse{2, 0, 1};
  const Tensor y = ops::transpose(x, perm);
  EXPECT_FALSE(y.shares_storage(x));
  EXPECT_TRUE(same_elements(ops::transpose(y, inverse), x));
  EXPECT_TRUE(same_elements(ops::transpose(scalar(4)), scalar(4)));
  EXPECT_EQ(ops::transpose(Tensor::empty({0, 3})).shape(), Shape({3, 0}));
}

TEST(ShapeOpsTest, TransposeErrors) {
  const Tensor x = Tensor::empty({2, 3, 4});
  EXPECT_THAT([&] { ops::transpose(x, {0, 1}); },
              ThrowsMessage<ValueError>(
                  HasSubstr("transpose: expected 3 axes for shape (2, 3, 4), got 2 axes (0, 1)")));
  EXPECT_THAT([&] { ops::transpose(x, {0, 2, -1}); },
              ThrowsMessage<ValueError>(
                  HasSubstr("transpose: axes (0, 2, -1) are not a permutation: axis -1 repeats")));
  EXPECT_THAT([&] { ops::transpose(x, {0, 1, 3}); },
              ThrowsMessage<IndexError>(HasSubstr("transpose: axis 3 is out of range for shape (2, 3, 4)")));
}

// --- concatenate, stack, split --------------------------------------------------------------

TEST(ShapeOpsTest, ConcatenateMatchesReference) {
  for (DType dtype : kShapeOpDTypes) {
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<Tensor> xs;
      for (int64_t k : {1, 7, 3}) {
        Shape shape{5, 4, 3};
        shape[axis] = k;
        xs.push_back(random_nonzero_of(shape, 20 + k, dtype));
      }
      EXPECT_TRUE(same_elements(ops::concatenate(xs, axis), reference_concatenate(xs, axis)));
      EXPECT_TRUE(same_elements(ops::concatenate(xs, axis - 3), reference_concatenate(xs, axis)));
    }
  }
  // Views as inputs, a single input (still a fresh copy), an empty part, a big one (threaded).
  const Tensor big = random_nonzero_of({1023, 130}, 8);
  const std::vector<Tensor> views{big.first_axis_slice(0, 1), big.first_axis_slice(1, 1),
                                  big.first_axis_slice(5, 1023)};
  EXPECT_TRUE(same_elements(ops::concatenate(views, 0), reference_concatenate(views, 0)));
  const Tensor single = ops::concatenate({big}, 1);
  EXPECT_FALSE(single.shares_storage(big));
  EXPECT_TRUE(same_elements(single, big));
  const std::vector<Tensor> wide{big, random_nonzero_of({1023, 7}, 9)};
  EXPECT_TRUE(same_elements(ops::concatenate(wide, 1), reference_concatenate(wide, 1)));
}

TEST(ShapeOpsTest, ConcatenateErrors) {
  EXPECT_THAT([] { ops::concatenate({}); },
              ThrowsMessage<ValueError>(HasSubstr("concatenate: expected at least one tensor, got an empty list")));
  const Tensor a = Tensor::empty({2, 3});
  EXPECT_THAT([&] { ops::concatenate({a, Tensor::empty({2, 3}, kInt32)}); },
              ThrowsMessage<DTypeError>(
                  HasSubstr("concatenate: tensor 1 has dtype int32, expected float32 like tensor 0")));
  EXPECT_THAT([&] { ops::concatenate({a, a, Tensor::empty({2, 4})}, 0); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "concatenate: tensor 2 has shape (2, 4), which does not match shape (2, 3) of tensor 0 "
                  "outside axis 0")));
  EXPECT_THAT([&] { ops::concatenate({a, Tensor::empty({2, 3, 1})}, 1); },
              ThrowsMessage<ShapeError>(HasSubstr("tensor 1 has shape (2, 3, 1), which does not match")));
  EXPECT_THAT([&] { ops::concatenate({scalar(1), scalar(2)}); },
              ThrowsMessage<ShapeError>(HasSubstr("concatenate: cannot concatenate scalars")));
  EXPECT_THAT([&] { ops::concatenate({a, a}, 2); },
              ThrowsMessage<IndexError>(HasSubstr("concatenate: axis 2 is out of range for shape (2, 3)")));
}

TEST(ShapeOpsTest, StackMatchesReferenceAndUnstacks) {
  for (DType dtype : kShapeOpDTypes) {
    const std::vector<Tensor> xs{random_nonzero_of({3, 7}, 30, dtype), random_nonzero_of({3, 7}, 31, dtype),
                                 random_nonzero_of({3, 7}, 32, dtype)};
    for (int axis = -3; axis <= 2; ++axis) {
      const int a = axis < 0 ? axis + 3 : axis;
      const Tensor y = ops::stack(xs, axis);
      const Tensor expected = gather_reference(y.shape(), dtype, [&](std::vector<int64_t> index) {
        const int64_t k = index[a];
        index.erase(index.begin() + a);
        return std::pair{&xs[k], ravel(index, xs[k].shape())};
      });
      EXPECT_TRUE(same_elements(y, expected)) << "axis " << axis;
      const std::vector<Tensor> parts = ops::split(y, 3, axis);  // unstack
      for (size_t k = 0; k < 3; ++k) EXPECT_TRUE(same_elements(ops::squeeze(parts[k], axis), xs[k]));
    }
  }
  EXPECT_EQ(ops::stack({scalar(1), scalar(2)}).to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(ShapeOpsTest, StackErrors) {
  EXPECT_THAT([] { ops::stack({}); },
              ThrowsMessage<ValueError>(HasSubstr("stack: expected at least one tensor, got an empty list")));
  const Tensor a = Tensor::empty({2, 3});
  EXPECT_THAT([&] { ops::stack({a, Tensor::empty({3, 2})}); },
              ThrowsMessage<ShapeError>(HasSubstr("stack: tensor 1 has shape (3, 2), expected (2, 3) like tensor 0")));
  EXPECT_THAT([&] { ops::stack({a, Tensor::empty({2, 3}, kBFloat16)}); },
              ThrowsMessage<DTypeError>(HasSubstr("stack: tensor 1 has dtype bfloat16, expected float32")));
  EXPECT_THAT([&] { ops::stack({a}, 3); },
              ThrowsMessage<IndexError>(HasSubstr("stack: axis 3 is out of range [-3, 2] for shape (2, 3)")));
}

TEST(ShapeOpsTest, SplitMatchesSlicesAndConcatenatesBack) {
  for (DType dtype : kShapeOpDTypes) {
    const Tensor x = random_nonzero_of({4, 1023}, 40, dtype);
    const std::vector<Tensor> thirds = ops::split(x, 3, 1);
    ASSERT_EQ(thirds.size(), 3u);
    for (int64_t k = 0; k < 3; ++k) {
      EXPECT_TRUE(same_elements(thirds[k], reference_slice(x, {0, 341 * k}, {4, 341})));
    }
    EXPECT_TRUE(same_elements(ops::concatenate(thirds, 1), x));
    // Index form: NumPy's x[:1], x[1:1], x[1:-2], x[-2:2000] (clamped).
    const std::vector<Tensor> cut = ops::split(x, std::vector<int64_t>{1, 1, -2, 2000}, -1);
    ASSERT_EQ(cut.size(), 5u);
    const int64_t bounds[] = {0, 1, 1, 1021, 1023, 1023};
    for (size_t k = 0; k < 5; ++k) {
      EXPECT_TRUE(same_elements(cut[k], reference_slice(x, {0, bounds[k]}, {4, bounds[k + 1] - bounds[k]})));
    }
    EXPECT_TRUE(same_elements(ops::concatenate(cut, 1), x));
  }
  const Tensor rows = random_nonzero_of({7, 2}, 41).first_axis_slice(1, 7);  // a view
  const auto halves = ops::split(rows, 2);
  EXPECT_TRUE(same_elements(halves[1], reference_slice(rows, {3, 0}, {3, 2})));
  EXPECT_EQ(ops::split(rows, std::vector<int64_t>{}).size(), 1u);
}

TEST(ShapeOpsTest, SplitErrors) {
  const Tensor x = Tensor::empty({2, 7});
  EXPECT_THAT([&] { ops::split(x, 3, 1); },
              ThrowsMessage<ValueError>(HasSubstr("split: 3 sections do not divide axis 1 of size 7")));
  EXPECT_THAT([&] { ops::split(x, 0, 1); },
              ThrowsMessage<ValueError>(HasSubstr("split: sections must be positive, got 0")));
  EXPECT_THAT([&] { ops::split(x, std::vector<int64_t>{5, 2}, 1); },
              ThrowsMessage<ValueError>(HasSubstr("split: indices (5, 2) must not decrease")));
  EXPECT_THAT([&] { ops::split(x, 2, 2); },
              ThrowsMessage<IndexError>(HasSubstr("split: axis 2 is out of range for shape (2, 7)")));
  EXPECT_THAT([&] { ops::split(scalar(1), 1); }, ThrowsMessage<IndexError>(HasSubstr("split: axis 0 is out of range")));
}

// --- slice, slice_update ----------------------------------------------------------------

TEST(ShapeOpsTest, SliceMatchesReference) {
  for (DType dtype : kShapeOpDTypes) {
    const Tensor x = random_nonzero_of({5, 7, 9}, 50, dtype);
    EXPECT_TRUE(same_elements(ops::slice(x, {1, 2, 3}, {3, 4, 5}), reference_slice(x, {1, 2, 3}, {3, 4, 5})));
    EXPECT_TRUE(same_elements(ops::slice(x, {0, 6, 0}, {5, 1, 9}), reference_slice(x, {0, 6, 0}, {5, 1, 9})));
    EXPECT_TRUE(same_elements(ops::slice(x, {4, 0, 8}, {-1, -1, -1}), reference_slice(x, {4, 0, 8}, {1, 7, 1})));
    EXPECT_EQ(ops::slice(x, {2, 0, 0}, {0, 7, 9}).shape(), Shape({0, 7, 9}));
  }
  const Tensor big = random_nonzero_of({1023, 300}, 51);
  EXPECT_TRUE(same_elements(ops::slice(big, {3, 1}, {1000, 298}), reference_slice(big, {3, 1}, {1000, 298})));
  const Tensor view = big.first_axis_slice(10, 20);
  EXPECT_TRUE(same_elements(ops::slice(view, {2, 5}, {3, 7}), reference_slice(big, {12, 5}, {3, 7})));
  EXPECT_TRUE(same_elements(ops::slice(scalar(3), {}, {}), scalar(3)));
}

TEST(ShapeOpsTest, SliceUpdateMatchesReference) {
  for (DType dtype : kShapeOpDTypes) {
    const Tensor x = random_nonzero_of({5, 7}, 60, dtype), updates = random_nonzero_of({2, 3}, 61, dtype);
    const Tensor y = ops::slice_update(x, {3, 4}, updates);
    const Tensor expected = gather_reference(x.shape(), dtype, [&](std::vector<int64_t> i) {
      const bool inside = i[0] >= 3 && i[0] < 5 && i[1] >= 4 && i[1] < 7;
      if (!inside) return std::pair{&x, ravel(i, x.shape())};
      return std::pair{&updates, ravel({i[0] - 3, i[1] - 4}, updates.shape())};
    });
    EXPECT_TRUE(same_elements(y, expected));
    EXPECT_FALSE(y.shares_storage(x));
  }
}

TEST(ShapeOpsTest, SliceErrors) {
  const Tensor x = Tensor::empty({3, 4});
  EXPECT_THAT([&] { ops::slice(x, {0}, {1, 1}); },
              ThrowsMessage<ValueError>(
                  HasSubstr("slice: expected 2 start indices and 2 sizes for shape (3, 4), got 1 and 2")));
  EXPECT_THAT([&] { ops::slice(x, {0, 2}, {1, 3}); },
              ThrowsMessage<IndexError>(
                  HasSubstr("slice: axis 1: start 2 and size 3 do not fit in a dimension of size 4 (shape (3, 4))")));
  EXPECT_THAT([&] { ops::slice(x, {-1, 0}, {1, 1}); },
              ThrowsMessage<IndexError>(HasSubstr("slice: axis 0: start -1 and size 1 do not fit")));
  EXPECT_THAT([&] { ops::slice(x, {0, 0}, {1, -2}); },
              ThrowsMessage<IndexError>(HasSubstr("slice: axis 1: start 0 and size -2 do not fit")));
  EXPECT_THAT([&] { ops::slice_update(x, {2, 0}, Tensor::empty({2, 4})); },
              ThrowsMessage<IndexError>(HasSubstr("slice_update: axis 0: start 2 and size 2 do not fit")));
  EXPECT_THAT([&] { ops::slice_update(x, {0, 0}, Tensor::empty({2}, kFloat32)); },
              ThrowsMessage<ShapeError>(HasSubstr("slice_update: updates of shape (2,) do not have the rank")));
  EXPECT_THAT([&] { ops::slice_update(x, {0, 0}, Tensor::empty({1, 1}, kInt64)); },
              ThrowsMessage<DTypeError>(HasSubstr("slice_update: updates have dtype int64, expected float32")));
}

// --- gradients ------------------------------------------------------------------------------

using Inputs = std::vector<Tensor>;

TEST(ShapeOpsGradientTest, ViewOps) {
  expect_gradients_match([](const Inputs& in) { return ops::reshape(in[0], {3, -1}); }, {random_tensor({2, 3, 2}, 1)});
  expect_gradients_match([](const Inputs& in) { return ops::expand_dims(in[0], 1); }, {random_tensor({2, 3}, 2)});
  expect_gradients_match([](const Inputs& in) { return ops::squeeze(in[0]); }, {random_tensor({1, 3, 1}, 3)});
  expect_gradients_match([](const Inputs& in) { return ops::squeeze(in[0], 2); }, {random_tensor({1, 3, 1}, 4)});
}

TEST(ShapeOpsGradientTest, Transpose) {
  expect_gradients_match([](const Inputs& in) { return ops::transpose(in[0]); }, {random_tensor({5, 7}, 5)});
  expect_gradients_match([](const Inputs& in) { return ops::transpose(in[0], {1, 2, 0}); },
                         {random_tensor({2, 3, 4}, 6)});
}

TEST(ShapeOpsGradientTest, ConcatenateAndStack) {
  const Inputs three{random_tensor({2, 3}, 7), random_tensor({2, 1}, 8), random_tensor({2, 4}, 9)};
  expect_gradients_match([](const Inputs& in) { return ops::concatenate(in, 1); }, three);
  const Inputs same{random_tensor({2, 3}, 10), random_tensor({2, 3}, 11)};
  expect_gradients_match([](const Inputs& in) { return ops::stack(in, 1); }, same);
  expect_gradients_match([](const Inputs& in) { return ops::stack(in, -1); }, same);
}

TEST(ShapeOpsGradientTest, SplitWithUnusedParts) {
  // Part 1 never reaches the output: its gradient is undefined and must count as zeros.
  expect_gradients_match(
      [](const Inputs& in) {
        const auto parts = ops::split(in[0], std::vector<int64_t>{1, 3}, 1);
        return ops::concatenate({parts[2], parts[0]}, 1);
      },
      {random_tensor({3, 5}, 12)});
  expect_gradients_match([](const Inputs& in) { return ops::split(in[0], 2, 0)[1]; }, {random_tensor({4, 3}, 13)});
}

TEST(ShapeOpsGradientTest, SliceAndSliceUpdate) {
  expect_gradients_match([](const Inputs& in) { return ops::slice(in[0], {1, 0, 2}, {2, 3, 1}); },
                         {random_tensor({4, 3, 5}, 14)});
  expect_gradients_match([](const Inputs& in) { return ops::slice_update(in[0], {1, 2}, in[1]); },
                         {random_tensor({4, 5}, 15), random_tensor({2, 3}, 16)});
}

TEST(ShapeOpsGradientTest, BFloat16GradientsKeepTheirDType) {
  const Tensor x = random_tensor({2, 3}, 17, -1, 1, kBFloat16);
  autograd::GradientTape tape;
  tape.watch(x);
  const Tensor y = ops::slice(ops::transpose(x), {1, 0}, {2, 2});
  const auto grads = tape.gradient(y, {x});
  ASSERT_TRUE(grads[0].defined());
  EXPECT_EQ(grads[0].dtype(), kBFloat16);
  EXPECT_EQ(grads[0].to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 1, 1}));
}

TEST(ShapeOpsGradientTest, IntegerInputsAreNotRecorded) {
  autograd::GradientTape tape;
  const Tensor y = ops::concatenate({random_nonzero_of({2}, 1, kInt32), random_nonzero_of({3}, 2, kInt32)});
  EXPECT_EQ(tape.num_records(), 0u);
  EXPECT_EQ(y.shape(), Shape({5}));
}

}  // namespace
}  // namespace chorus
