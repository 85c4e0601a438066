// The values of a model's variables as saving writes them: whole, whatever the layout. A
// table split by rows across the workers of a job (DistributedEmbedding), or a variable
// sharded over a mesh that spans the workers, is gathered from every worker's part.
// Stateless; a collective in a multi-worker job where a variable is split.
#pragma once

#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/io/safetensors.h"

namespace chorus::cluster {
class WorkerGroup;
}

namespace chorus::models {

// `variables` by path with their whole values: where a variable is split across the
// workers of `group`, gathered from every worker (so every worker calls this, in the same
// order); elsewhere its value, or a copy of it where `copy` (a backup written while
// training goes on). `group` may be nullptr when no variable is split.
io::NamedTensors whole_values(const std::vector<autograd::Variable>& variables, cluster::WorkerGroup* group,
                              bool copy = false);

}  // namespace chorus::models
