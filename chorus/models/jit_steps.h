// Internal to Model (model.cc, model_steps.cc): the compiled forms of the default steps
// under compile({.jit_compile = true}), and what each call's results mean, learned when
// it was traced. Owned by its Model; one step at a time.
#pragma once

#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/core/tree.h"
#include "chorus/jit/function.h"

namespace chorus::models {

struct JitSteps {
  // train: the whole default train step of a batch's leaves (forward pass, loss, gradients,
  // the optimizer's update and the metrics as host nodes); returns the loss.
  std::unique_ptr<jit::Function> train;
  const Tree* batch = nullptr;  // the batch being run: its structure rebuilds the leaves
  // Set by each trace (the same for every signature of one model): what the host nodes'
  // inputs mean.
  Tree y, y_pred;
  bool has_sample_weight = false;
  int64_t rows = -1;
  std::vector<autograd::Variable> variables;
  std::vector<size_t> with_gradient;  // indices into variables
};

}  // namespace chorus::models
