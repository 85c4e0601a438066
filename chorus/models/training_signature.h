// training_signature: what every worker of a multi-worker job must agree on before the
// first step (cluster::check_same_signature): one line per weight (path, shape,
// dtype, trainable) in the model's order, then the global batch size and the compiled
// optimizer's configuration. Reads the model only; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/models/model.h"

namespace chorus::models {

// REQUIRES: the model is built (its weights exist). The optimizer line is omitted when
// the model is not compiled.
std::vector<std::string> training_signature(const Model& model, int64_t global_batch_size);

}  // namespace chorus::models
