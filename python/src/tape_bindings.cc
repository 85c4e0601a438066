// tf.GradientTape from Python, over autograd::GradientTape: the `with` block records the
// ops its thread runs (a custom train_step's forward pass), and gradient() may be asked
// after the block ends, as in TensorFlow. A tape records once.
#include <pybind11/stl.h>

#include <memory>
#include <vector>

#include "chorus/autograd/tape.h"
#include "python/src/bindings.h"
#include "python/src/conversions.h"

namespace chorus::python {
namespace {

using namespace pybind11::literals;

class PythonTape {
 public:
  explicit PythonTape(bool persistent) : persistent_(persistent) {}

  PythonTape& enter() {
    if (tape_) throw py::value_error("GradientTape: a tape records in one `with` block; make another for the next");
    tape_ = std::make_unique<autograd::GradientTape>(persistent_);
    return *this;
  }
  void exit() { started("__exit__").stop_recording(); }
  void watch(const py::handle& tensor) { started("watch").watch(to_tensor(tensor)); }

  // d target / d sources: a list for a list or tuple of sources, else one gradient; None
  // where a source does not reach the target (Keras's rule).
  py::object gradient(const py::handle& target, const py::handle& sources) {
    const bool many = py::isinstance<py::list>(sources) || py::isinstance<py::tuple>(sources);
    std::vector<Tensor> from;
    if (many) {
      for (const py::handle source : sources) from.push_back(to_tensor(source));
    } else {
      from.push_back(to_tensor(sources));
    }
    const Tensor of = to_tensor(target);
    autograd::GradientTape& tape = started("gradient");
    std::vector<Tensor> grads;
    {
      py::gil_scoped_release release;
      grads = tape.gradient(of, from);
    }
    py::list out;
    for (const Tensor& g : grads) out.append(g.defined() ? py::cast(g) : py::none());
    return many ? py::object(out) : out[0];
  }

 private:
  autograd::GradientTape& started(const char* method) {
    if (!tape_) throw py::value_error(std::string("GradientTape.") + method + ": use the tape in a `with` block first");
    return *tape_;
  }

  bool persistent_;
  std::unique_ptr<autograd::GradientTape> tape_;
};

}  // namespace

void bind_tape(py::module_& m) {
  py::class_<PythonTape>(m, "GradientTape", "tf.GradientTape: `with GradientTape() as tape:`, then tape.gradient().")
      .def(py::init<bool>(), "persistent"_a = false)
      .def("__enter__", &PythonTape::enter, py::return_value_policy::reference_internal)
      .def("__exit__", [](PythonTape& tape, const py::object&, const py::object&, const py::object&) { tape.exit(); })
      .def("watch", &PythonTape::watch, "tensor"_a)
      .def("gradient", &PythonTape::gradient, "target"_a, "sources"_a);
}

}  // namespace chorus::python
