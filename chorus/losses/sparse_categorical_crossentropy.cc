#include "chorus/losses/sparse_categorical_crossentropy.h"

#include <cmath>
#include <type_traits>
#include <vector>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/softmax_kernels.h"
#include "chorus/jit/tracer.h"
#include "chorus/losses/loss_util.h"
#include "chorus/ops/operators.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/shape_ops.h"

namespace chorus::losses {
namespace {

// Where flat label `i` sits, for error messages.
std::string label_position(const Shape& shape, int64_t i) {
  if (shape.rank() <= 1) return fmt::format("batch element {}", i);
  std::vector<int64_t> index(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    index[static_cast<size_t>(d)] = i % shape[d];
    i /= shape[d];
  }
  return fmt::format("index {}", Shape(index).to_string());
}

// Writes y_true's labels into `out` (flat int64), each checked to be an integer in
// [0, classes): throws naming the first that is not.
void fill_checked_labels(const std::string& name, const Tensor& y_true, const Shape& shape, int64_t classes,
                         const Tensor& labels) {
  int64_t* out = labels.data<int64_t>();
  visit_dtype(y_true.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw_error<DTypeError>("{}: expected integer labels (int32, int64, or floats holding integers), got bool", name);
    } else {
      const T* in = static_cast<const T*>(y_true.raw_data());
      for (int64_t i = 0; i < y_true.numel(); ++i) {
        const auto value = +arithmetic_value(in[i]);  // + promotes uint8 (Keras's MNIST labels) to int
        if constexpr (std::is_floating_point_v<decltype(value)>) {
          if (std::floor(value) != value) {  // also NaN and inf
            throw_error<ValueError>("{}: label {} at {} is not an integer", name, value, label_position(shape, i));
          }
        }
        if (!(value >= 0 && value < classes)) {
          throw_error<IndexError>("{}: label {} out of range [0, {}) at {}", name, value, classes,
                                  label_position(shape, i));
        }
        out[i] = static_cast<int64_t>(value);
      }
    }
  });
}

// The labels as a flat int64 tensor, checked (fill_checked_labels). A compiled step
// checks every batch's labels as the eager one does.
Tensor checked_labels(const std::string& name, const Tensor& y_true, const Shape& shape, int64_t classes) {
  Tensor labels = Tensor::empty(Shape{y_true.numel()}, kInt64);
  fill_checked_labels(name, y_true, shape, classes, labels);
  jit::record("checked_labels", {y_true}, {labels}, [&] {
    return jit::Kernel([name, shape, classes](auto in, auto out) {
      fill_checked_labels(name, in[0], shape, classes, out[0]);
    });
  });
  return labels;
}

// Calls fn(const T* data) with T float or bfloat16, logits' dtype.
template <class Fn>
void with_logits_type(const Tensor& logits, Fn&& fn) {
  if (logits.dtype() == kBFloat16) {
    fn(logits.data<bfloat16>());
  } else {
    fn(logits.data<float>());
  }
}

// -log_softmax(logits)[label] per row, in float32. logits: (rows, classes) float32 or
// bfloat16 in memory (any leading shape), labels: (rows,) int64, checked. One pass each
// way and no (rows, classes) buffer but the gradient, in the logits' dtype: the backward
// rereads the logits (the caller's y_pred, alive anyway) with each row's max and exp-sum.
// bfloat16 logits are widened as they load, not copied to float32 first.
Tensor sparse_softmax_crossentropy(const Tensor& logits, const Tensor& labels, const Shape& out_shape) {
  const int64_t rows = labels.numel(), classes = logits.dim(-1);
  Tensor max = Tensor::empty(Shape{rows}, kFloat32), sum = Tensor::empty(Shape{rows}, kFloat32);
  Tensor out = Tensor::empty(out_shape, kFloat32);
  if (rows > 0) {
    jit::launch("sparse_categorical_crossentropy", {logits, labels}, {out, max, sum}, [rows, classes](auto in, auto o) {
      with_logits_type(in[0], [&](const auto* x) {
        backend::cpu::sparse_softmax_cross_entropy(x, in[1].template data<int64_t>(), o[0].template data<float>(),
                                                   o[1].template data<float>(), o[2].template data<float>(), rows,
                                                   classes);
      });
    });
  }
  autograd::record("sparse_categorical_crossentropy", {logits}, {out}, [&] {
    return [logits, labels, max, sum](std::span<const Tensor> g) {
      if (!g[0].defined()) return std::vector<Tensor>{Tensor()};
      const int64_t rows = labels.numel(), classes = logits.dim(-1);
      const Tensor g_rows = internal::as_float32(g[0]);
      Tensor dx = Tensor::empty(logits.shape(), logits.dtype());
      if (rows > 0 && classes > 0) {
        jit::launch("sparse_categorical_crossentropy_grad", {logits, labels, max, sum, g_rows}, {dx},
                    [rows, classes](auto in, auto out) {
                      with_logits_type(in[0], [&](const auto* x) {
                        using T = std::remove_cvref_t<decltype(*x)>;
                        backend::cpu::sparse_softmax_cross_entropy_grad(
                            x, in[1].template data<int64_t>(), in[2].template data<float>(),
                            in[3].template data<float>(), in[4].template data<float>(),
                            static_cast<T*>(out[0].raw_data()), rows, classes);
                      });
                    });
      }
      return std::vector<Tensor>{dx};
    };
  });
  return out;
}

// -log(clip(p / sum(p)))[label] per row, with ops (take gathers, its gradient scatters).
Tensor sparse_probability_crossentropy(const Tensor& probs, const Tensor& labels, const Shape& out_shape) {
  const int64_t classes = probs.dim(-1);
  const Tensor normalised = probs / ops::sum(probs, -1, /*keepdims=*/true);
  const Tensor log_probs = ops::log(ops::clip(normalised, internal::kEpsilon, 1 - internal::kEpsilon));
  Tensor flat_index = Tensor::empty(Shape{labels.numel()}, kInt64);
  const int64_t* label = labels.data<int64_t>();
  int64_t* index = flat_index.data<int64_t>();
  for (int64_t r = 0; r < labels.numel(); ++r) index[r] = r * classes + label[r];
  const Tensor picked = ops::take(ops::reshape(log_probs, {-1}), flat_index, 0);
  return ops::reshape(-picked, out_shape.to_vector());
}

Tensor sparse_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred, bool from_logits) {
  internal::check_defined(name, y_true, y_pred);
  if (y_pred.rank() == 0) {
    throw_error<ShapeError>("{}: expected y_pred of shape (..., classes), got shape ()", name);
  }
  std::vector<int64_t> batch_dims = y_pred.shape().to_vector();
  batch_dims.pop_back();
  const Shape batch_shape(batch_dims);
  std::vector<int64_t> label_dims = y_true.shape().to_vector();
  if (y_true.rank() == y_pred.rank() && label_dims.back() == 1) label_dims.pop_back();  // (batch, 1)
  const Shape label_shape(label_dims);
  if (y_true.dtype() == kBool) {
    throw_error<DTypeError>("{}: expected integer labels (int32, int64, or floats holding integers), got bool", name);
  }
  if (label_shape != batch_shape) {
    Shape with_one = batch_shape;
    with_one.push_back(1);
    throw_error<ShapeError>("{}: expected y_true of shape {} or {} to match y_pred of shape {}, got {}", name,
                            batch_shape.to_string(), with_one.to_string(), y_pred.shape().to_string(),
                            y_true.shape().to_string());
  }
  const Tensor labels = checked_labels(name, y_true, batch_shape, y_pred.dim(-1));
  if (from_logits && y_pred.dtype() == kBFloat16) return sparse_softmax_crossentropy(y_pred, labels, batch_shape);
  const Tensor pred = internal::as_float32(y_pred);
  return from_logits ? sparse_softmax_crossentropy(pred, labels, batch_shape)
                     : sparse_probability_crossentropy(pred, labels, batch_shape);
}

}  // namespace

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options)
    : Loss(std::move(options.name), std::move(options.reduction)), from_logits_(options.from_logits) {}

Tensor SparseCategoricalCrossentropy::call(const Tensor& y_true, const Tensor& y_pred) const {
  return sparse_values(name(), y_true, y_pred, from_logits_);
}

nlohmann::json SparseCategoricalCrossentropy::get_config() const {
  nlohmann::json config = base_config();
  config["from_logits"] = from_logits_;
  return config;
}

nlohmann::json SparseCategoricalCrossentropy::to_config() const {
  return {{"class_name", "SparseCategoricalCrossentropy"}, {"config", get_config()}};
}

Tensor sparse_categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, bool from_logits) {
  return sparse_values("sparse_categorical_crossentropy", y_true, y_pred, from_logits);
}

}  // namespace chorus::losses
