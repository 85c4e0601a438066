// Keras 3's class_weight_to_sample_weights (trainers/data_adapters), on chorus tensors.
#include "python/src/class_weight.h"

#include <cmath>
#include <vector>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/shape_ops.h"

namespace chorus::python {

namespace py = pybind11;

ClassWeights class_weights_of(const py::dict& class_weight) {
  ClassWeights weights;
  for (const auto& [key, value] : class_weight) {
    if (!py::isinstance<py::int_>(key) || !(py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value))) {
      throw py::type_error("fit: class_weight maps class indices (int) to weights (float); got " +
                           py::repr(key).cast<std::string>() + ": " + py::repr(value).cast<std::string>());
    }
    weights[key.cast<int64_t>()] = value.cast<float>();
  }
  return weights;
}

Tensor sample_weights_of(const Tensor& y, const ClassWeights& weights) {
  if (y.rank() == 0) throw_error<ValueError>("class_weight: the labels must have a rows axis, got a scalar");
  Tensor classes = y;
  if (y.rank() > 1) classes = y.dim(-1) == 1 ? ops::squeeze(y, -1) : ops::argmax(y, -1);
  const std::vector<float> labels = ops::cast(classes, kFloat32).to_vector<float>();
  std::vector<float> out(labels.size(), 1.0f);
  for (size_t i = 0; i < labels.size(); ++i) {
    auto found = weights.find(static_cast<int64_t>(std::nearbyint(labels[i])));
    if (found != weights.end()) out[i] = found->second;
  }
  return from_values<float>(out, Shape{static_cast<int64_t>(out.size())});
}

data::Dataset with_class_weights(const data::Dataset& batches, const ClassWeights& weights) {
  return batches.map([weights](const Tree& batch) {
    if (batch.is_list() && batch.size() == 3) {
      throw_error<ValueError>("fit: you cannot use `class_weight` and `sample_weight` at the same time (the "
                              "batches already carry sample weights)");
    }
    if (!batch.is_list() || batch.size() != 2) {
      throw_error<ValueError>("fit: class_weight needs (x, y) batches, got {}", batch.to_string());
    }
    if (!batch[1].is_tensor()) {
      throw_error<ValueError>("fit: `class_weight` is only supported for Models with a single output");
    }
    return Tree::list({batch[0], batch[1], Tree(sample_weights_of(batch[1].tensor(), weights))});
  });
}

}  // namespace chorus::python
