// The parts of the _chorus extension module, one function per file that binds them.
// module.cc calls them in dependency order: tensors before layers before models.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/data/dataset.h"
#include "chorus/models/model.h"

namespace chorus::python {

namespace py = pybind11;

void bind_errors(py::module_& m);     // module.cc
void bind_tensors(py::module_& m);    // tensor_bindings.cc: Tensor, Variable, ops
void bind_layers(py::module_& m);     // layer_bindings.cc: Layer, Input, the registry
void bind_training(py::module_& m);   // training_bindings.cc: optimizers, losses, metrics, callbacks
void bind_models(py::module_& m);     // model_bindings.cc: Model, Sequential, fit/evaluate/predict
void bind_data(py::module_& m);       // data_bindings.cc: Dataset, the data set readers
void bind_text(py::module_& m);       // text_bindings.cc: string ops
void bind_distribution(py::module_& m);  // distribution_bindings.cc: devices, meshes, DataParallel
void bind_recsys(py::module_& m);     // recsys_bindings.cc: BruteForceRetrieval
void bind_hub(py::module_& m);        // hub_bindings.cc: BertMaskedLM
void bind_tape(py::module_& m);       // tape_bindings.cc: GradientTape

// Ops and losses on fewer elements than this run holding the GIL. Releasing it and taking
// it back costs a thread handoff whenever another thread waits for it, as data-parallel
// replicas running Python call() do: tens of microseconds, more than such an op takes.
// Larger ones release it, so that replicas compute them in parallel.
constexpr int64_t kReleaseElements = int64_t{1} << 15;

template <class F>
Tensor released(int64_t elements, F&& f) {
  if (elements < kReleaseElements) return f();
  py::gil_scoped_release release;
  return f();
}

template <class... T>
int64_t numel(const T&... tensors) {
  return (tensors.numel() + ...);
}

inline int64_t numel(const std::vector<Tensor>& tensors) {
  int64_t elements = 0;
  for (const Tensor& t : tensors) elements += t.numel();
  return elements;
}

// Raises Python's NotImplementedError: what Keras has and chorus does not yet.
[[noreturn]] inline void throw_not_implemented(const std::string& what) {
  PyErr_SetString(PyExc_NotImplementedError, what.c_str());
  throw py::error_already_set();
}

// A Dataset of what `make_iterator()` yields, called at the start of each pass (tuples
// become (x, y[, sample_weight]) batches); the Python code runs with the GIL.
data::Dataset generator_dataset(const py::object& make_iterator);

// What fit and evaluate train on for `model`: a task with a preprocessor (BertMaskedLM)
// preprocesses raw strings first (hub_bindings.cc).
data::Dataset prepared_for(const models::Model& model, const data::Dataset& dataset);

}  // namespace chorus::python
