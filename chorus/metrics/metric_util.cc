#include "chorus/metrics/metric_util.h"

#include <cmath>
#include <limits>
#include <tuple>
#include <type_traits>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/backend/cpu/reduce_kernels.h"
#include "chorus/losses/loss_util.h"
#include "chorus/ops/elementwise.h"

namespace chorus::metrics::internal {
namespace {

// Rows per parallel chunk so that a chunk reads about 64K elements.
int64_t row_grain(int64_t n) { return std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(n, 1)); }

Shape leading(const Shape& shape, int rank) { return Shape(std::vector<int64_t>(shape.begin(), shape.begin() + rank)); }

// `weights` (shape `from`) expanded to `to` by NumPy broadcasting. REQUIRES: it broadcasts.
std::vector<double> broadcast_weights(const std::vector<double>& weights, const Shape& from, const Shape& to) {
  const auto strides = broadcast_strides(from, to);
  std::vector<double> out(static_cast<size_t>(to.numel()));
  for (int64_t i = 0; i < to.numel(); ++i) {
    int64_t rest = i, offset = 0;
    for (int d = to.rank() - 1; d >= 0; --d) {
      offset += (rest % to[d]) * strides[static_cast<size_t>(d)];
      rest /= to[d];
    }
    out[static_cast<size_t>(i)] = weights[static_cast<size_t>(offset)];
  }
  return out;
}

bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  for (int i = 1; i <= from.rank(); ++i) {
    const int64_t f = from[from.rank() - i];
    if (f != 1 && f != to[to.rank() - i]) return false;
  }
  return true;
}

}  // namespace

void accumulate(const std::string& name, const SampleValues& v, const Tensor& sample_weight, Reduce reduce,
                double& total, double& count) {
  Shape values_shape = v.shape, weight_shape;
  std::vector<double> weights;
  if (!sample_weight.defined()) {
    if (values_shape.rank() == 0) {
      total += v.values.at(0);
      count += 1;
      return;
    }
    weight_shape = Shape{values_shape[0]};
    weights.assign(static_cast<size_t>(values_shape[0]), 1.0);
  } else {
    weights = sample_weight.to_vector<double>();
    std::tie(values_shape, weight_shape) =
        losses::internal::squeeze_or_expand_shapes(values_shape, sample_weight.shape());
  }
  const int rank = weight_shape.rank();
  if (rank > values_shape.rank() || !broadcasts_to(weight_shape, leading(values_shape, rank))) {
    throw_error<ShapeError>("{}: sample_weight shape {} does not match the values' shape {}", name,
                            sample_weight.shape().to_string(), v.shape.to_string());
  }
  // Units: the values reduced to the weight's rank; samples: units grouped by axis 0.
  const Shape units_shape = leading(values_shape, rank);
  const int64_t units = units_shape.numel();
  if (units == 0) return;
  const std::vector<double> w = broadcast_weights(weights, weight_shape, units_shape);
  const int64_t per_unit = values_shape.numel() / units;
  const int64_t samples = rank >= 1 ? units_shape[0] : 1, per_sample = units / samples;
  const double scale = reduce == Reduce::kMean ? 1.0 / static_cast<double>(per_sample) : 1.0;
  for (int64_t s = 0; s < samples; ++s) {
    double weighted = 0, weight = 0;
    for (int64_t u = s * per_sample; u < (s + 1) * per_sample; ++u) {
      double unit = 0;
      for (int64_t i = u * per_unit; i < (u + 1) * per_unit; ++i) unit += v.values[static_cast<size_t>(i)];
      if (reduce == Reduce::kMean) unit /= static_cast<double>(per_unit);
      weighted += unit * w[static_cast<size_t>(u)];
      weight += w[static_cast<size_t>(u)];
    }
    total += weighted * scale;
    count += weight * scale;
  }
}

double round_to(DType dtype, double value) {
  if (dtype == kFloat32) return static_cast<float>(value);
  if (dtype == kBFloat16) return static_cast<float>(bfloat16(static_cast<float>(value)));
  return value;
}

void check_defined(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  if (!y_true.defined()) throw_error<ValueError>("{}: y_true is an undefined tensor", name);
  if (!y_pred.defined()) throw_error<ValueError>("{}: y_pred is an undefined tensor", name);
}

void check_k(const std::string& name, int64_t k) {
  if (k < 1) throw_error<ValueError>("{}: expected k >= 1, got {}", name, k);
}

Shape batch_shape_of(const Shape& shape) { return leading(shape, shape.rank() - 1); }

std::vector<int64_t> row_argmax(const Tensor& x) {
  const int64_t n = x.dim(-1), rows = n == 0 ? 0 : x.numel() / n;
  std::vector<int64_t> out(static_cast<size_t>(rows));
  if (rows == 0) return out;
  // The first true (bool), or the first largest byte (uint8): argmax kernels exist for int32.
  const Tensor values = x.dtype() == kBool || x.dtype() == kUInt8 ? ops::cast(x, kInt32) : x;
  visit_data(values, [&](const auto* data) {
    using T = std::remove_cvref_t<decltype(*data)>;
    if constexpr (!std::is_same_v<T, bool> && !std::is_same_v<T, uint8_t>) {
      backend::cpu::argmax(data, out.data(), rows, n, 1);
    }
  });
  return out;
}

std::vector<double> in_top_k(const std::vector<double>& labels, const Tensor& scores, int64_t k) {
  const int64_t n = scores.dim(-1), rows = static_cast<int64_t>(labels.size());
  std::vector<double> out(labels.size(), 0.0);
  visit_data(scores, [&](const auto* data) {
    backend::cpu::parallel_for(rows, row_grain(n), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const double label = labels[static_cast<size_t>(r)];
        if (!(label >= 0 && label < static_cast<double>(n) && std::floor(label) == label)) continue;
        const auto* row = data + r * n;
        double target = as_double(row[static_cast<int64_t>(label)]);
        if (std::isnan(target)) target = -std::numeric_limits<double>::infinity();
        int64_t greater = 0;
        for (int64_t c = 0; c < n; ++c) greater += as_double(row[c]) > target ? 1 : 0;
        out[static_cast<size_t>(r)] = greater < k ? 1.0 : 0.0;
      }
    });
  });
  return out;
}

}  // namespace chorus::metrics::internal
