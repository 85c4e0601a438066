#include "chorus/losses/loss_util.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "chorus/core/creation.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/shape_ops.h"

namespace chorus::losses::internal {
namespace {

Shape with_trailing_one(const Shape& s) {
  Shape out = s;
  out.push_back(1);
  return out;
}

Shape without_last(const Shape& s) {
  std::vector<int64_t> dims = s.to_vector();
  dims.pop_back();
  return Shape(dims);
}

Tensor reshaped(const Tensor& x, const Shape& shape) {
  return x.shape() == shape ? x : ops::reshape(x, shape.to_vector());
}

// NumPy's rule for broadcasting `from` to exactly `to`.
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.rank() > to.rank()) return false;
  for (int i = 1; i <= from.rank(); ++i) {
    const int64_t f = from[from.rank() - i], t = to[to.rank() - i];
    if (f != 1 && f != t) return false;
  }
  return true;
}

// True when `prefix` equals the first prefix.rank() dims of `shape`.
bool is_leading_prefix(const Shape& prefix, const Shape& shape) {
  if (prefix.rank() == 0 || prefix.rank() >= shape.rank()) return false;
  for (int i = 0; i < prefix.rank(); ++i) {
    if (prefix[i] != shape[i]) return false;
  }
  return true;
}

}  // namespace

std::pair<Shape, Shape> squeeze_or_expand_shapes(const Shape& a, const Shape& b) {
  const int ra = a.rank(), rb = b.rank();
  if (ra == rb + 1 && a[ra - 1] == 1) {
    return rb == 1 ? std::pair{a, with_trailing_one(b)} : std::pair{without_last(a), b};
  }
  if (rb == ra + 1 && b[rb - 1] == 1) {
    return ra == 1 ? std::pair{with_trailing_one(a), b} : std::pair{a, without_last(b)};
  }
  return {a, b};
}

std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(const Tensor& a, const Tensor& b) {
  const auto [sa, sb] = squeeze_or_expand_shapes(a.shape(), b.shape());
  return {reshaped(a, sa), reshaped(b, sb)};
}

void check_reduction(const std::string& owner, const std::string& reduction) {
  static constexpr std::array<std::string_view, 5> kKnown = {"sum_over_batch_size", "mean", "sum",
                                                             "mean_with_sample_weight", "none"};
  if (std::find(kKnown.begin(), kKnown.end(), reduction) == kKnown.end()) {
    throw_error<ValueError>("{}: unknown reduction '{}'; expected one of sum_over_batch_size, mean, sum, "
                            "mean_with_sample_weight, none",
                            owner, reduction);
  }
}

std::string reduction_of(ConfigReader& reader) {
  const nlohmann::json* r = reader.find("reduction");
  if (r == nullptr) return "sum_over_batch_size";
  if (r->is_null()) return "none";
  const std::string reduction = reader.string("reduction", "");
  check_reduction(reader.owner(), reduction);
  return reduction;
}

void check_label_smoothing(const std::string& name, double label_smoothing) {
  if (!(label_smoothing >= 0 && label_smoothing <= 1)) {
    throw_error<ValueError>("{}: expected label_smoothing in [0, 1], got {}", name, label_smoothing);
  }
}

void check_defined(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  if (!y_true.defined()) throw_error<ValueError>("{}: y_true is an undefined tensor", name);
  if (!y_pred.defined()) throw_error<ValueError>("{}: y_pred is an undefined tensor", name);
}

Tensor as_float32(const Tensor& x) { return x.dtype() == kFloat32 ? x : ops::cast(x, kFloat32); }

std::pair<Tensor, Tensor> aligned_pair(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  check_defined(name, y_true, y_pred);
  auto [t, p] = squeeze_or_expand_to_same_rank(as_float32(y_true), as_float32(y_pred));
  if (t.shape() != p.shape()) {
    throw_error<ShapeError>("{}: y_true shape {} and y_pred shape {} do not match", name, y_true.shape().to_string(),
                            y_pred.shape().to_string());
  }
  if (p.rank() == 0) {
    throw_error<ShapeError>("{}: expected y_true and y_pred of rank >= 1, got shapes {} and {}", name,
                            y_true.shape().to_string(), y_pred.shape().to_string());
  }
  return {t, p};
}

Tensor reduce_weighted(const std::string& name, const Tensor& losses, const Tensor& sample_weight,
                       const std::string& reduction) {
  Tensor weighted = as_float32(losses);
  Tensor weight_total;  // mean_with_sample_weight: the weights summed over the losses' shape
  if (sample_weight.defined()) {
    auto [values, weight] = squeeze_or_expand_to_same_rank(weighted, as_float32(sample_weight));
    if (is_leading_prefix(weight.shape(), values.shape())) {
      Shape per_sample = weight.shape();
      while (per_sample.rank() < values.rank()) per_sample.push_back(1);
      weight = reshaped(weight, per_sample);
    }
    if (!broadcasts_to(weight.shape(), values.shape())) {
      throw_error<ShapeError>("{}: sample_weight shape {} does not broadcast to the per-sample losses' shape {}", name,
                              sample_weight.shape().to_string(), losses.shape().to_string());
    }
    weighted = ops::multiply(values, weight);
    if (reduction == "mean_with_sample_weight") {
      weight_total = ops::sum(weight);
      if (weight.numel() != values.numel() && weight.numel() > 0) {
        const double losses_per_weight = static_cast<double>(values.numel()) / static_cast<double>(weight.numel());
        weight_total = ops::multiply(weight_total, scalar(losses_per_weight));
      }
    }
  }
  if (reduction == "none") return weighted;
  if (reduction == "sum") return ops::sum(weighted);
  if (reduction == "mean_with_sample_weight") {
    // divide_no_nan: a batch whose weights are all 0 has loss 0. A tensor, not a host
    // number, so that a compiled step divides by each batch's own total.
    if (!weight_total.defined()) weight_total = scalar(static_cast<double>(weighted.numel()));
    const Tensor zero = scalar(0.0f);
    return ops::divide(ops::sum(weighted), ops::where(ops::equal(weight_total, zero), scalar(1.0f), weight_total));
  }
  const int64_t count = std::max<int64_t>(weighted.numel(), 1);  // an empty batch sums to 0
  return ops::divide(ops::sum(weighted), scalar(static_cast<double>(count)));
}

}  // namespace chorus::losses::internal
