// SharedObject: a Python object held by C++ code (a pipeline's map function, a schedule)
// that may copy and drop it on any thread: copies share one reference, and the last copy
// releases it holding the GIL. Use get() only with the GIL held.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

namespace chorus::python {

namespace py = pybind11;

class SharedObject {
 public:
  explicit SharedObject(py::object object)
      : object_(new py::object(std::move(object)), [](py::object* o) {
          if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing to release
          py::gil_scoped_acquire gil;
          delete o;
        }) {}

  const py::object& get() const { return *object_; }

 private:
  std::shared_ptr<py::object> object_;
};

}  // namespace chorus::python
