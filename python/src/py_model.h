// PyModel<Base>: the C++ side of a model subclassed in Python (Base: Model or
// Sequential). Besides PyLayer's call() and build(), a compute_loss() defined in Python
// computes the loss of every train and test step, with Keras's `training` flag, and a
// train_step() or test_step() defined in Python replaces the whole step.
#pragma once

#include <atomic>

#include "chorus/models/model.h"
#include "python/src/py_layer.h"

namespace chorus::python {

template <class Base>
class PyModel : public PyLayer<Base> {
 public:
  using PyLayer<Base>::PyLayer;

  models::Logs train_step(const Tree& batch) override {
    if (!this->defines("train_step", train_step_defined_)) return Base::train_step(batch);
    return python_step("train_step", batch);
  }
  models::Logs test_step(const Tree& batch) override {
    if (!this->defines("test_step", test_step_defined_)) return Base::test_step(batch);
    return python_step("test_step", batch);
  }

  Tensor compute_loss(const Tree& x, const Tree& y, const Tree& y_pred, const Tensor& sample_weight) override {
    if (!this->defines("compute_loss", compute_loss_defined_)) return Base::compute_loss(x, y, y_pred, sample_weight);
    py::gil_scoped_acquire gil;
    py::object self = py::cast(static_cast<Base*>(this));
    py::object weight = sample_weight.defined() ? py::cast(sample_weight) : py::none();
    return to_tensor(self.attr("_chorus_compute_loss")(from_tree(x, false), from_tree(y, false),
                                                        from_tree(y_pred, false), weight, training_.load()));
  }

 protected:
  using StepResult = typename Base::StepResult;
  // chorus's compute_loss has no training flag; Keras passes one. Train and test steps
  // never overlap, so the flag of the step in progress is the one its replicas see.
  StepResult forward_step(const Tree& x, const Tree& y, const Tensor& sample_weight, bool training) override {
    training_.store(training);
    return Base::forward_step(x, y, sample_weight, training);
  }

 private:
  // Keras passes the batch as a tuple: (x, y) or (x, y, sample_weight).
  models::Logs python_step(const char* method, const Tree& batch) {
    py::gil_scoped_acquire gil;
    py::object self = py::cast(static_cast<Base*>(this));
    return logs_of(self.attr(method)(from_tree(batch, /*numpy=*/false, /*tuples=*/true)), method);
  }

  std::atomic<bool> training_{true};
  mutable std::atomic<int> compute_loss_defined_{0}, train_step_defined_{0}, test_step_defined_{0};
};

}  // namespace chorus::python
