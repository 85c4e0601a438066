// The optimizer base: slot bookkeeping, then per step, as Keras's BaseOptimizer.apply():
// drop undefined gradients, clip (clipnorm, global_clipnorm or clipvalue), decay the
// weights (decoupled, before the step), run each variable's fused update_step, and count
// the step. Gradients are never modified in place: clipping writes new tensors.

#include "chorus/optimizers/optimizer.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/gather_kernels.h"
#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/core/sharding.h"
#include "chorus/optimizers/update_kernels.h"
#include "chorus/profiler/profiler.h"
#include "chorus/step/step_context.h"

namespace chorus::optimizers {
namespace {

using nlohmann::json;

json optional_json(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

std::string optional_text(const std::optional<double>& value) {
  return value ? fmt::format("{}", *value) : std::string("None");
}

// A clipped gradient: x * factor in a new tensor.
Tensor scaled(const Tensor& grad, double factor) {
  Tensor out = Tensor::empty(grad.shape(), kFloat32);
  kernels::scale(grad.data<float>(), out.data<float>(), grad.numel(), static_cast<float>(factor));
  return out;
}

// Throws ValueError unless `slices` is well formed for a variable of its dense_shape, so
// that no update can write outside the variable.
void check_slices(const autograd::IndexedSlices& slices, const std::string& optimizer, const std::string& path) {
  const Tensor& indices = slices.indices;
  const Shape& dense = slices.dense_shape;
  const bool index_ok =
      indices.defined() && indices.rank() == 1 && (indices.dtype() == kInt32 || indices.dtype() == kInt64);
  const Shape expected = autograd::IndexedSlices::rows_shape(dense, index_ok ? indices.dim(0) : 0);
  if (!index_ok || dense.rank() == 0 || slices.values.shape() != expected) {
    throw_error<ValueError>(
        "{}: the sparse gradient for '{}' is malformed: expected (n,) int32 or int64 indices and values of shape "
        "{}, got indices {} and values {}",
        optimizer, path, expected.to_string(), indices.defined() ? indices.shape().to_string() : "undefined",
        slices.values.shape().to_string());
  }
  const int64_t bad = indices.dtype() == kInt32
                          ? backend::cpu::find_out_of_range(indices.data<int32_t>(), indices.numel(), dense[0])
                          : backend::cpu::find_out_of_range(indices.data<int64_t>(), indices.numel(), dense[0]);
  if (bad >= 0) {
    throw_error<IndexError>("{}: the sparse gradient for '{}' names row {} at position {}, outside [0, {})", optimizer,
                            path, indices.dtype() == kInt32 ? int64_t{indices.data<int32_t>()[bad]}
                                                            : indices.data<int64_t>()[bad],
                            bad, dense[0]);
  }
}

// `part` summed over the devices along mesh `axis` (a block's share of a sum of squares);
// `part` itself for a whole gradient (axis -1).
double sum_over_axis(double part, int axis) {
  if (axis < 0) return part;
  Tensor total = full({1}, part);
  MeshContext::current()->all_reduce(total, axis);
  return total.item<double>();
}

}  // namespace

Optimizer::Optimizer(std::string class_name, std::string name, LearningRate learning_rate, OptimizerOptions options)
    : class_name_(std::move(class_name)),
      name_(std::move(name)),
      learning_rate_(std::move(learning_rate)),
      options_(options),
      iterations_("optimizer/iterations", scalar(0, kInt64), /*trainable=*/false) {
  const int clip_args = options_.clipnorm.has_value() + options_.clipvalue.has_value() +
                        options_.global_clipnorm.has_value();
  if (clip_args > 1) {
    throw_error<ValueError>(
        "{}: only one of clipnorm, clipvalue and global_clipnorm can be set, got clipnorm={}, clipvalue={}, "
        "global_clipnorm={}",
        name_, optional_text(options_.clipnorm), optional_text(options_.clipvalue),
        optional_text(options_.global_clipnorm));
  }
}

void Optimizer::build(std::span<const Variable> variables) {
  if (built_) {
    const bool same = variables.size() == built_variables_.size() &&
                      std::equal(variables.begin(), variables.end(), built_variables_.begin(),
                                 [](const Variable& a, const Variable& b) { return a.is(b); });
    if (same) return;
    throw_error<ValueError>("{}: already built for {} variables, got {} other variables; build() runs once", name_,
                            built_variables_.size(), variables.size());
  }
  std::unordered_map<const void*, size_t> index_of;
  for (size_t i = 0; i < variables.size(); ++i) {
    const Variable& v = variables[i];
    if (v.dtype() != kFloat32) {
      throw_error<DTypeError>("{}: variable '{}' has dtype {}: only float32 variables are supported", name_,
                              v.path(), dtype_name(v.dtype()));
    }
    if (!index_of.emplace(v.id(), i).second) {
      throw_error<ValueError>("{}: variable '{}' is listed twice", name_, v.path());
    }
  }
  built_variables_.assign(variables.begin(), variables.end());
  index_of_ = std::move(index_of);
  slots_.reserve(variables.size());
  for (const Variable& v : variables) {
    slots_.emplace_back();
    build_slots(v);  // add_slot() appends to slots_.back()
  }
  built_ = true;
}

Variable Optimizer::add_slot(const Variable& variable, const std::string& slot, double initial_value) {
  assert(!slots_.empty() && "add_slot is only called from build_slots");
  Variable v = Variable::filled_like("optimizer/" + variable.path() + "/" + slot, variable, initial_value);
  if (variable.row_shard()) v.set_row_shard(*variable.row_shard());  // the same rows as its variable
  slots_.back().push_back(v);
  all_slots_.push_back(v);
  return v;
}

std::vector<Variable> Optimizer::slots_of(const Variable& variable) const {
  for (size_t i = 0; i < built_variables_.size(); ++i) {
    if (built_variables_[i].is(variable)) return slots_[i];
  }
  return {};
}

int64_t Optimizer::iterations() const { return iterations_.value().data<int64_t>()[0]; }

double Optimizer::learning_rate() const { return learning_rate_.at(iterations()); }

void Optimizer::set_learning_rate(double value) {
  if (learning_rate_.is_schedule()) {
    const json config = learning_rate_.schedule()->get_config();
    const json* class_name = config.contains("class_name") ? &config["class_name"] : nullptr;
    throw_error<ValueError>("{}: cannot set the learning rate: it is a schedule ({})", name_,
                            class_name && class_name->is_string() ? class_name->get<std::string>() : "custom");
  }
  learning_rate_ = LearningRate(value);
}

std::vector<Variable> Optimizer::variables() const {
  std::vector<Variable> out;
  out.reserve(all_slots_.size() + 1);
  out.push_back(iterations_);
  out.insert(out.end(), all_slots_.begin(), all_slots_.end());
  return out;
}

void Optimizer::apply_gradients(std::span<const Tensor> grads, std::span<const Variable> variables) {
  apply_gradients(grads, variables, {});
}

void Optimizer::apply_gradients(std::span<const Tensor> grads, std::span<const Variable> variables,
                                std::span<const autograd::IndexedSlices> sparse) {
  if (grads.size() != variables.size() || (!sparse.empty() && sparse.size() != variables.size())) {
    throw_error<ValueError>("{}: got {} gradients for {} variables", name_,
                            grads.size() == variables.size() ? sparse.size() : grads.size(), variables.size());
  }
  for (size_t i = 0; i < sparse.size(); ++i) {
    if (!sparse[i].defined()) continue;
    if (grads[i].defined()) {
      throw_error<ValueError>("{}: variable '{}' got both a dense and a sparse gradient", name_, variables[i].path());
    }
    check_slices(sparse[i], name_, variables[i].path());
  }
  // Inside a data-parallel replica step the aggregator reduces across replicas first, then
  // runs one update (tf.distribute's cross-replica apply_gradients).
  const auto update_with = [this](std::span<const Tensor> g, std::span<const autograd::IndexedSlices> s,
                                  std::span<const Variable> v) { update(g, v, s); };
  if (aggregator_ == nullptr || !aggregator_->apply(grads, sparse, variables, update_with)) {
    update(grads, variables, sparse);
  }
}

void Optimizer::update(std::span<const Tensor> grads, std::span<const Variable> variables,
                       std::span<const autograd::IndexedSlices> sparse) {
  profiler::Scope event("optimizer", name_);
  const auto is_sparse = [&](size_t i) { return !sparse.empty() && sparse[i].defined(); };
  if (!built_) build(variables);

  // The variables that have a gradient, with their build index.
  std::vector<size_t> active, index;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined() && !is_sparse(i)) continue;
    const Variable& v = variables[i];
    size_t k = i;
    if (i >= built_variables_.size() || !built_variables_[i].is(v)) {
      const auto it = index_of_.find(v.id());
      if (it == index_of_.end()) {
        throw_error<ValueError>("{}: variable '{}' is not one of the {} variables this optimizer was built with",
                                name_, v.path(), built_variables_.size());
      }
      k = it->second;
    }
    const Shape& shape = is_sparse(i) ? sparse[i].dense_shape : grads[i].shape();
    const DType dtype = is_sparse(i) ? sparse[i].values.dtype() : grads[i].dtype();
    if (shape != v.shape()) {
      throw_error<ShapeError>("{}: the gradient for '{}' has shape {}, expected the variable's shape {}", name_,
                              v.path(), shape.to_string(), v.shape().to_string());
    }
    if (dtype != v.dtype()) {
      throw_error<DTypeError>("{}: the gradient for '{}' has dtype {}, expected {}", name_, v.path(),
                              dtype_name(dtype), dtype_name(v.dtype()));
    }
    active.push_back(i);
    index.push_back(k);
  }
  if (active.empty()) throw_error<ValueError>("{}: no gradients provided for any variable", name_);

  autograd::NoGradGuard no_grad;  // nothing here may be recorded, even inside a user's tape
  // Clipping reads whole gradients: sparse ones become dense first.
  const bool clips = (options_.clipnorm && *options_.clipnorm > 0) ||
                     (options_.global_clipnorm && *options_.global_clipnorm > 0) ||
                     (options_.clipvalue && *options_.clipvalue > 0);
  std::vector<Tensor> clipped;
  clipped.reserve(active.size());
  std::vector<int> shard_axes;
  for (const size_t i : active) {
    clipped.push_back(is_sparse(i) && clips ? sparse[i].to_dense() : grads[i]);
    const Sharding* block = MeshContext::current() ? variables[i].value().impl()->sharding.get() : nullptr;
    shard_axes.push_back(block != nullptr ? block->axis : -1);
  }
  clip_gradients(clipped, shard_axes);

  const double lr = learning_rate();
  if (options_.weight_decay && *options_.weight_decay != 0) {
    for (const size_t i : active) {
      const Variable& v = variables[i];
      if (!v.trainable()) continue;
      kernels::weight_decay(v.value().data<float>(), v.value().numel(), static_cast<float>(*options_.weight_decay),
                            static_cast<float>(lr));
    }
  }
  const int64_t step = iterations() + 1;
  for (size_t j = 0; j < active.size(); ++j) {
    if (clipped[j].defined()) {
      update_step(clipped[j], variables[active[j]], index[j], lr, step);
    } else {
      update_step_sparse(sparse[active[j]], variables[active[j]], index[j], lr, step);
    }
  }
  iterations_.value().data<int64_t>()[0] = step;
}

void Optimizer::clip_gradients(std::vector<Tensor>& grads, const std::vector<int>& shard_axes) const {
  if (options_.clipnorm && *options_.clipnorm > 0) {
    const double limit = *options_.clipnorm;
    for (size_t j = 0; j < grads.size(); ++j) {
      Tensor& g = grads[j];
      const double norm = std::sqrt(sum_over_axis(kernels::sum_of_squares(g.data<float>(), g.numel()), shard_axes[j]));
      if (!(norm <= limit)) g = scaled(g, limit / norm);  // NaN norms give NaN gradients, as in Keras
    }
  } else if (options_.global_clipnorm && *options_.global_clipnorm > 0) {
    const double limit = *options_.global_clipnorm;
    // Whole gradients count once; blocks add up over their axis (in axis order on every device).
    std::map<int, double> sums;
    for (size_t j = 0; j < grads.size(); ++j) {
      sums[shard_axes[j]] += kernels::sum_of_squares(grads[j].data<float>(), grads[j].numel());
    }
    double sum = 0;
    for (const auto& [axis, part] : sums) sum += sum_over_axis(part, axis);
    const double norm = std::sqrt(sum);
    if (norm <= limit) return;
    // Keras turns every gradient into NaN when the global norm is not finite.
    const double factor = std::isfinite(norm) ? limit / norm : std::numeric_limits<double>::quiet_NaN();
    for (Tensor& g : grads) g = scaled(g, factor);
  } else if (options_.clipvalue && *options_.clipvalue > 0) {
    const float limit = static_cast<float>(*options_.clipvalue);
    for (Tensor& g : grads) {
      Tensor out = Tensor::empty(g.shape(), kFloat32);
      kernels::clip(g.data<float>(), out.data<float>(), g.numel(), limit);
      g = out;
    }
  }
}

json Optimizer::get_config() const {
  const json lr = learning_rate_.is_schedule() ? learning_rate_.schedule()->get_config() : json(learning_rate_.at(0));
  return {{"name", name_},
          {"learning_rate", lr},
          {"weight_decay", optional_json(options_.weight_decay)},
          {"clipnorm", optional_json(options_.clipnorm)},
          {"global_clipnorm", optional_json(options_.global_clipnorm)},
          {"clipvalue", optional_json(options_.clipvalue)}};
}

json Optimizer::to_config() const { return {{"class_name", class_name_}, {"config", get_config()}}; }

}  // namespace chorus::optimizers
