// Conversions between Python values and chorus's: NumPy arrays and tensors, nested
// Python structures and Trees, Python literals and JSON configs. Call with the GIL held.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <nlohmann/json.hpp>

#include "chorus/core/tree.h"
#include "chorus/models/logs.h"

namespace chorus::python {

namespace py = pybind11;

// A tensor from a chorus Tensor, a NumPy array or anything np.asarray accepts. float64
// and float16 become float32 (chorus's floatx, as keras.ops.convert_to_tensor gives for
// Python floats); other integer widths become int32 (int64 for 64-bit ones); bytes and str
// become string tensors. `dtype`, when given, casts the result.
Tensor to_tensor(const py::handle& value, const char* dtype = nullptr);

// A NumPy view of `tensor` sharing its memory (the array keeps the tensor's storage
// alive); bfloat16 is widened to a float32 copy, strings become an object array of bytes.
py::array to_numpy(const Tensor& tensor);

// A Tree from a tensor, array or scalar (a leaf), a dict with str keys, or a list or
// tuple of those. None is the empty tree. Throws ValueError naming the path to a leaf
// that cannot be converted.
Tree to_tree(const py::handle& value);

// The Python structure of `tree`: dicts, lists (tuples where `tuples`), and leaves as
// chorus Tensors, or as NumPy arrays when `numpy`. A one-element list stays a list.
py::object from_tree(const Tree& tree, bool numpy, bool tuples = false);

// Keras's logs (a train_step's result, a callback's `logs`) as a dict of floats, and back
// from a dict of numbers, tensors or 0-d arrays (a custom train_step's return value;
// nested dicts are flattened, as Keras does).
py::dict logs_dict(const models::Logs& logs);
models::Logs logs_of(const py::handle& dict, const char* who);

// JSON from Python literals (None, bool, int, float, str, list, tuple, dict with str
// keys), and objects with a to_config() (optimizers, losses, schedules): the config of a
// layer's or optimizer's constructor. Callables are named by their __name__ (Keras's
// activations by function).
nlohmann::json to_json(const py::handle& value);
py::object from_json(const nlohmann::json& value);

}  // namespace chorus::python
