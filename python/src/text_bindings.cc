// tf.strings on chorus's string ops (chorus/text/string_ops.h).
#include <pybind11/stl.h>

#include <string>

#include "chorus/text/string_ops.h"
#include "python/src/bindings.h"
#include "python/src/conversions.h"

namespace chorus::python {

using namespace pybind11::literals;

void bind_text(py::module_& m) {
  py::module_ strings = m.def_submodule("strings", "tf.strings: ops on string tensors");
  strings.def("to_number", [](const py::object& input, const std::string& out_type) {
    Tensor t = to_tensor(input);
    py::gil_scoped_release release;
    return text::to_number(t, parse_dtype(out_type));
  }, "input"_a, "out_type"_a = "float32");
  strings.def("length", [](const py::object& input) {
    Tensor t = to_tensor(input);
    py::gil_scoped_release release;
    return text::length(t);
  }, "input"_a);
  strings.def("lower", [](const py::object& input) {
    Tensor t = to_tensor(input);
    py::gil_scoped_release release;
    return text::lower(t);
  }, "input"_a);
}

}  // namespace chorus::python
