// PyLayer<Base>: the C++ side of a layer or model subclassed in Python. Its call() and
// build() run the Python methods (taking the GIL while they run); add_weight and
// sublayer tracking are opened to Python. A Python subclass instance keeps itself alive
// (retain_python_object) because the C++ graph that holds it cannot hold its Python half;
// it therefore lives until the process ends.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <string>

#include "chorus/layers/layer.h"
#include "python/src/conversions.h"

namespace chorus::python {

// Shapes as Keras's build(input_shape) receives them: tuples (None for a symbolic batch),
// in the inputs' structure.
py::object input_shapes(const Tree& inputs);

// What Python reaches of a PyLayer<Base> whatever its Base (a layer or a model).
class PythonSubclass {
 public:
  virtual ~PythonSubclass() = default;
  virtual void retain_python_object() = 0;
  virtual autograd::Variable add_weight_public(const std::string& name, const Shape& shape,
                                               const layers::Initializer& init, bool trainable, DType dtype) = 0;
  virtual void track_public(std::shared_ptr<layers::Layer> sublayer) = 0;
  // Whether this layer's Python build() is running: its super().build(input_shape) then
  // has nothing left to do (the C++ side marks the layer built when it returns).
  virtual bool in_python_build() const = 0;
};

template <class Base>
class PyLayer : public Base, public PythonSubclass {
 public:
  using Base::Base;

  Tree call(const Tree& inputs, bool training) override {
    if (defines("call", call_defined_)) {
      py::gil_scoped_acquire gil;
      py::object self = py::cast(static_cast<Base*>(this));
      return to_tree(self.attr("_chorus_call")(from_tree(inputs, false), training));
    }
    if constexpr (std::is_abstract_v<Base>) {
      throw py::type_error(this->name() + ": a Layer subclass must define call(self, inputs)");
    } else {
      return Base::call(inputs, training);
    }
  }

  void retain_python_object() override { self_ = py::cast(static_cast<Base*>(this)); }
  autograd::Variable add_weight_public(const std::string& name, const Shape& shape, const layers::Initializer& init,
                                       bool trainable, DType dtype) override {
    return this->add_weight(name, shape, init, trainable, dtype);
  }
  void track_public(std::shared_ptr<layers::Layer> sublayer) override { this->track(std::move(sublayer)); }
  bool in_python_build() const override { return in_python_build_; }

 protected:
  void build(const Tree& inputs) override {
    if (defines("build", build_defined_)) {
      py::gil_scoped_acquire gil;
      in_python_build_ = true;
      try {
        py::cast(static_cast<Base*>(this)).attr("build")(input_shapes(inputs));
      } catch (...) {
        in_python_build_ = false;
        throw;
      }
      in_python_build_ = false;
      return;
    }
    Base::build(inputs);
  }

  // Whether the Python class defines `method`, looked up once: a functional model made
  // from Python calls call() at every step, which then needs no GIL.
  bool defines(const char* method, std::atomic<int>& cache) const {
    int state = cache.load(std::memory_order_acquire);
    if (state == 0) {
      py::gil_scoped_acquire gil;
      state = py::get_override(static_cast<const Base*>(this), method) ? 1 : 2;
      cache.store(state, std::memory_order_release);
    }
    return state == 1;
  }

 private:
  py::object self_;
  bool in_python_build_ = false;  // guarded by the layer's build mutex
  mutable std::atomic<int> call_defined_{0}, build_defined_{0};  // 0: not looked up; 1: yes; 2: no
};

}  // namespace chorus::python
