// The _chorus extension module: chorus's C++ API for the Python package in python/chorus,
// which gives it Keras's module layout. chorus's errors become the Python exceptions
// Keras raises for the same mistakes.
#include "chorus/core/error.h"
#include "python/src/bindings.h"

namespace chorus::python {

void bind_errors(py::module_&) {
  py::register_exception_translator([](std::exception_ptr error) {
    try {
      if (error) std::rethrow_exception(error);
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const ShapeError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const DTypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(PyExc_IndexError, e.what());
    } catch (const IOError& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    } catch (const ResourceExhaustedError& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace chorus::python

PYBIND11_MODULE(_chorus, m) {
  m.doc() = "chorus: Keras's programming model on chorus's C++ engine";
  chorus::python::bind_errors(m);
  chorus::python::bind_tensors(m);
  chorus::python::bind_layers(m);
  chorus::python::bind_tape(m);
  chorus::python::bind_training(m);
  chorus::python::bind_data(m);
  chorus::python::bind_text(m);
  chorus::python::bind_distribution(m);
  chorus::python::bind_recsys(m);
  chorus::python::bind_models(m);
  chorus::python::bind_hub(m);
}
