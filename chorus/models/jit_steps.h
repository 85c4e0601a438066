// Internal to Model (model.cc, model_steps.cc): the compiled forms of the default steps
// under compile({.jit_compile = true}), and what each call's values mean, learned when it
// was traced. Owned by its Model; one step at a time.
#pragma once

#include <memory>
#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/core/tree.h"
#include "chorus/jit/function.h"

namespace chorus::models {

// One step's compiled function of a batch's leaves, and the structures its host nodes'
// inputs and its results have (set by each trace: the same for every signature).
struct JitStep {
  std::unique_ptr<jit::Function> function;
  Tree y, y_pred;
  bool has_sample_weight = false;
  int64_t rows = -1;
};

struct JitSteps {
  // train: forward pass, loss, gradients, and the optimizer's update and the metrics as
  // host nodes. test: forward pass, loss and the metrics. predict: the outputs' leaves.
  JitStep train, test, predict;
  const Tree* batch = nullptr;  // the batch being run: its structure rebuilds the leaves
  std::vector<autograd::Variable> variables;  // the trainable weights, as traced
  std::vector<size_t> with_gradient;          // indices into variables
};

}  // namespace chorus::models
