#include "chorus/layers/preprocessing/normalization.h"

#include <algorithm>
#include <cmath>

#include "chorus/core/creation.h"
#include "chorus/layers/layer_util.h"
#include "chorus/layers/preprocessing/preprocessing_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {
namespace {

constexpr double kEpsilon = 1e-7;  // Keras's backend.epsilon(): the smallest divisor

// A tensor as nested JSON lists (a number for a scalar), as numpy's tolist().
nlohmann::json to_nested(const std::vector<double>& values, const Shape& shape, int axis, size_t& next) {
  if (axis == shape.rank()) return values[next++];
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < shape[axis]; ++i) out.push_back(to_nested(values, shape, axis + 1, next));
  return out;
}

// Nested JSON lists of numbers as a float32 tensor. Throws ValueError naming `key` for
// ragged lists or non-numbers.
Tensor from_nested(const nlohmann::json& json, const char* key) {
  std::vector<int64_t> dims;
  for (const nlohmann::json* j = &json; j->is_array(); j = &(*j)[0]) {
    dims.push_back(static_cast<int64_t>(j->size()));
    if (j->empty()) break;
  }
  std::vector<float> values;
  auto walk = [&](const nlohmann::json& j, size_t depth, auto&& self) -> void {
    if (depth == dims.size()) {
      if (!j.is_number()) {
        throw_error<ValueError>("Normalization.from_config: '{}' holds {}, not a number", key, j.dump());
      }
      values.push_back(j.get<float>());
      return;
    }
    if (!j.is_array() || static_cast<int64_t>(j.size()) != dims[depth]) {
      throw_error<ValueError>("Normalization.from_config: '{}' is not a rectangular array: {}", key, json.dump());
    }
    for (const auto& item : j) self(item, depth + 1, self);
  };
  walk(json, 0, walk);
  return from_values(values, Shape(dims));
}

std::string axes_string(const std::vector<int>& axes) { return nlohmann::json(axes).dump(); }

}  // namespace

Normalization::Normalization(NormalizationOptions options)
    : Layer("Normalization", options.name), options_(std::move(options)) {
  const Tensor &mean = options_.mean, &variance = options_.variance;
  if (mean.defined() != variance.defined()) {
    throw_error<ValueError>("Normalization: mean and variance must be given together. Received: mean {}, variance {}",
                            mean.defined() ? "given" : "undefined", variance.defined() ? "given" : "undefined");
  }
  if (!mean.defined()) return;
  if (mean.shape() != variance.shape()) {
    throw_error<ValueError>("Normalization: mean and variance must have the same shape. Received: mean shape {} and "
                            "variance shape {}",
                            mean.shape().to_string(), variance.shape().to_string());
  }
  if (mean.rank() > static_cast<int>(options_.axis.size())) {
    throw_error<ValueError>("Normalization: the rank of mean must be at most the number of axes ({}). Received: mean "
                            "shape {} for axis {}",
                            options_.axis.size(), mean.shape().to_string(), axes_string(options_.axis));
  }
  check_not_string("Normalization", mean.dtype());
  check_not_string("Normalization", variance.dtype());
  options_.mean = ops::cast(mean, kFloat32).clone();
  options_.variance = ops::cast(variance, kFloat32).clone();
}

void Normalization::build(const Tree& inputs) {
  const Tensor& x = detail::single_input(inputs, name());
  check_numeric(x.dtype(), "inputs");
  rank_ = x.rank();
  keep_.clear();
  for (int axis : options_.axis) {
    if (axis < -rank_ || axis >= rank_) {
      throw_error<ValueError>("{}: every axis must be in [-ndim, ndim); inputs of shape {} have ndim={}, axis={}",
                              name(), x.shape().to_string(), rank_, axes_string(options_.axis));
    }
    keep_.push_back(axis < 0 ? axis + rank_ : axis);
  }
  std::sort(keep_.begin(), keep_.end());
  keep_.erase(std::unique(keep_.begin(), keep_.end()), keep_.end());
  if (is_symbolic(x) && !keep_.empty() && keep_[0] == 0) {
    throw_error<ValueError>("{}: a kept axis must have a known size, but axis 0 of a symbolic input (shape {}) is the "
                            "batch axis; use axis={{}} or adapt() the layer before using it in a model",
                            name(),
                            detail::batch_shape_string(std::vector<int64_t>(x.shape().begin() + 1, x.shape().end())));
  }
  kept_shape_.clear();
  broadcast_shape_.assign(static_cast<size_t>(rank_), 1);
  for (int axis : keep_) {
    kept_shape_.push_back(x.dim(axis));
    broadcast_shape_[axis] = x.dim(axis);
  }
  if (!options_.mean.defined()) {
    mean_ = add_weight("mean", Shape(kept_shape_), "zeros", /*trainable=*/false);
    variance_ = add_weight("variance", Shape(kept_shape_), "ones", /*trainable=*/false);
    count_ = add_weight("count", Shape{}, "zeros", /*trainable=*/false, kInt64);
    return;
  }
  // Given statistics: their dims align with the kept axes from the right.
  std::vector<int64_t> expanded(static_cast<size_t>(rank_), 1);
  const Shape& given = options_.mean.shape();
  for (int i = 1; i <= given.rank(); ++i) {
    const int axis = keep_[keep_.size() - static_cast<size_t>(i)];
    const int64_t dim = given[given.rank() - i];
    if (dim != 1 && dim != x.dim(axis)) {
      throw_error<ValueError>("{}: the given mean of shape {} does not broadcast to the kept dims {} of inputs of "
                              "shape {}",
                              name(), given.to_string(), Shape(kept_shape_).to_string(), x.shape().to_string());
    }
    expanded[axis] = dim;
  }
  given_mean_ = ops::broadcast_to(ops::reshape(options_.mean, expanded), Shape(broadcast_shape_)).clone();
  given_variance_ = ops::broadcast_to(ops::reshape(options_.variance, expanded), Shape(broadcast_shape_)).clone();
}

void Normalization::check_numeric(DType dtype, const char* what) const {
  if (is_string(dtype)) {
    throw_error<DTypeError>("{}: expected numeric {}, got dtype string (use StringLookup or TextVectorization for "
                            "strings)",
                            name(), what);
  }
}

Tree Normalization::call(const Tree& inputs, bool /*training*/) {
  const Tensor& input = detail::single_input(inputs, name());
  check_numeric(input.dtype(), "inputs");
  // A batch, or one element of it (dataset.map before batch()) when the batch axis is not kept.
  const int skip = input.rank() == rank_ - 1 && (keep_.empty() || keep_[0] > 0) ? 1 : 0;
  bool matches = input.rank() == rank_ - skip;
  for (size_t i = 0; matches && i < keep_.size(); ++i) matches = input.dim(keep_[i] - skip) == kept_shape_[i];
  if (!matches) {
    throw_error<ShapeError>("{}: expected inputs of rank {} with dims {} on axes {}, got shape {}", name(), rank_,
                            Shape(kept_shape_).to_string(), axes_string(keep_), input.shape().to_string());
  }
  const std::vector<int64_t> shape(broadcast_shape_.begin() + skip, broadcast_shape_.end());
  const Tensor x = input.dtype() == kFloat32 ? input : ops::cast(input, kFloat32);
  const Tensor mean = ops::reshape(given_mean_.defined() ? given_mean_ : mean_.value(), shape);
  const Tensor variance = ops::reshape(given_variance_.defined() ? given_variance_ : variance_.value(), shape);
  const Tensor scale = ops::maximum(ops::sqrt(variance), scalar(kEpsilon));
  return options_.invert ? mean + x * scale : (x - mean) / scale;
}

Tensor Normalization::mean() const {
  if (given_mean_.defined()) return ops::reshape(given_mean_, kept_shape_);
  return mean_.defined() ? mean_.value() : Tensor();
}

Tensor Normalization::variance() const {
  if (given_variance_.defined()) return ops::reshape(given_variance_, kept_shape_);
  return variance_.defined() ? variance_.value() : Tensor();
}

void Normalization::check_adapt_shape(const Shape& shape, const std::string& what) const {
  bool matches = shape.rank() == rank_;
  for (size_t i = 0; matches && i < keep_.size(); ++i) matches = shape[keep_[i]] == kept_shape_[i];
  if (!matches) {
    throw_error<ValueError>("{}: adapt got {} of shape {}, but the layer was built for rank {} with dims {} on axes {}",
                            name(), what, shape.to_string(), rank_, Shape(kept_shape_).to_string(), axes_string(keep_));
  }
}

Normalization::Moments Normalization::moments_of(const Tensor& batch) const {
  const std::vector<double> values = batch.to_vector<double>();
  const Shape& shape = batch.shape();
  const size_t kept = static_cast<size_t>(Shape(kept_shape_).numel());
  // kept_index[i] for element i, walking the elements' coordinates in row-major order.
  std::vector<size_t> kept_index(values.size());
  std::vector<int64_t> coords(static_cast<size_t>(rank_), 0);
  for (size_t i = 0; i < values.size(); ++i) {
    size_t k = 0;
    for (size_t a = 0; a < keep_.size(); ++a) k = k * static_cast<size_t>(kept_shape_[a]) + coords[keep_[a]];
    kept_index[i] = k;
    for (int axis = rank_ - 1; axis >= 0 && ++coords[axis] == shape[axis]; --axis) coords[axis] = 0;
  }
  Moments m;
  m.count = kept == 0 ? 0 : static_cast<double>(values.size() / kept);
  m.mean.assign(kept, 0);
  m.m2.assign(kept, 0);
  for (size_t i = 0; i < values.size(); ++i) m.mean[kept_index[i]] += values[i];
  for (double& mean : m.mean) mean /= m.count;
  for (size_t i = 0; i < values.size(); ++i) {
    const double d = values[i] - m.mean[kept_index[i]];
    m.m2[kept_index[i]] += d * d;
  }
  return m;
}

void Normalization::assign(const Moments& moments) {
  std::vector<float> mean, variance;
  for (size_t k = 0; k < moments.mean.size(); ++k) {
    mean.push_back(static_cast<float>(moments.mean[k]));
    variance.push_back(static_cast<float>(moments.m2[k] / moments.count));
  }
  mean_.assign(from_values(mean, Shape(kept_shape_)));
  variance_.assign(from_values(variance, Shape(kept_shape_)));
  count_.assign(scalar(moments.count, kInt64));
}

void Normalization::adapt(const Tensor& data) {
  if (options_.mean.defined()) {
    throw_error<ValueError>("{}: cannot adapt a layer that was given its mean and variance", name());
  }
  if (!data.defined() || data.numel() == 0) {
    throw_error<ValueError>("{}: adapt was given an empty tensor of shape {}; expected data to compute the mean and "
                            "variance of",
                            name(), data.defined() ? data.shape().to_string() : std::string("(undefined)"));
  }
  check_numeric(data.dtype(), "data");
  if (!built()) build_from(Tree(data));
  check_adapt_shape(data.shape(), "data");
  assign(moments_of(data));
}

void Normalization::adapt(const data::Dataset& data, std::optional<int64_t> steps) {
  if (options_.mean.defined()) {
    throw_error<ValueError>("{}: cannot adapt a layer that was given its mean and variance", name());
  }
  Moments total;
  const int64_t batches = detail::for_each_batch(data, steps, name(), [&](const Tree& element, int64_t i) {
    const Tree& first = element.is_list() && element.size() > 0 ? element[0] : element;  // (x, y): x
    if (!first.is_tensor()) {
      throw_error<ValueError>("{}: adapt expected each dataset element to be a tensor or an (x, ...) list, got {} at "
                              "element {}",
                              name(), element.to_string(), i);
    }
    Tensor batch = first.tensor();
    check_numeric(batch.dtype(), fmt::format("data at element {} of the dataset", i).c_str());
    if (batch.rank() == 1) batch = batch.view(Shape{1, batch.dim(0)});  // one sample of features
    if (!built()) build_from(Tree(batch));
    check_adapt_shape(batch.shape(), fmt::format("element {} of the dataset", i));
    if (batch.numel() == 0) return;
    const Moments m = moments_of(batch);
    if (total.count == 0) {
      total = m;
      return;
    }
    // Chan et al.'s pairwise combination: exact, whatever the batch sizes.
    const double n = total.count + m.count;
    for (size_t k = 0; k < m.mean.size(); ++k) {
      const double delta = m.mean[k] - total.mean[k];
      total.mean[k] += delta * m.count / n;
      total.m2[k] += m.m2[k] + delta * delta * total.count * m.count / n;
    }
    total.count = n;
  });
  if (batches == 0 || total.count == 0) {
    throw_error<ValueError>("{}: adapt was given an empty dataset ({}); expected batches of data to compute the mean "
                            "and variance of",
                            name(), batches == 0 ? "no elements" : fmt::format("{} elements with no values", batches));
  }
  assign(total);
}

nlohmann::json Normalization::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["axis"] = options_.axis;
  config["invert"] = options_.invert;
  for (const char* key : {"mean", "variance"}) {
    const Tensor& t = std::string(key) == "mean" ? options_.mean : options_.variance;
    size_t next = 0;
    config[key] = t.defined() ? to_nested(t.to_vector<double>(), t.shape(), 0, next) : nlohmann::json();
  }
  return config;
}

std::shared_ptr<Normalization> Normalization::from_config(const nlohmann::json& config) {
  ConfigReader r("Normalization", config);
  NormalizationOptions options;
  if (const nlohmann::json* axis = r.find("axis")) {
    options.axis = axis->is_null()    ? std::vector<int>{}
                   : axis->is_array() ? r.value<std::vector<int>>("axis", {})
                                      : std::vector<int>{r.value<int>("axis", -1)};
  }
  options.invert = r.boolean("invert", false);
  if (const nlohmann::json* mean = r.find("mean"); mean != nullptr && !mean->is_null()) {
    options.mean = from_nested(*mean, "mean");
  }
  if (const nlohmann::json* variance = r.find("variance"); variance != nullptr && !variance->is_null()) {
    options.variance = from_nested(*variance, "variance");
  }
  options.name = detail::config_name(r);
  auto layer = std::make_shared<Normalization>(std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
