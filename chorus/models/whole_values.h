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

// One variable at a time, for a writer that holds one whole tensor at once (a sharded
// checkpoint). Per variable, the blocks this worker contributes when it is gathered over
// the workers of `group`, or an empty list where it need not be (a collective when some
// variable is split over a mesh that spans the workers: every worker calls it).
std::vector<std::vector<bool>> blocks_to_add(const std::vector<autograd::Variable>& variables,
                                             cluster::WorkerGroup* group);
// Whether whole_value(v, add, ...) is a collective every worker of the job must join.
bool gathered_over_workers(const autograd::Variable& v, const std::vector<bool>& add);
// What whole_value returns where no collective is needed: the value itself (kNone), a
// copy (kCopy), or a fresh whole that the variable does not keep (kFresh: a distributed
// variable's value() would keep the gathered whole until the next step).
enum class WholeCopy { kNone, kCopy, kFresh };
// `v`'s whole value; `add` is its entry of blocks_to_add.
Tensor whole_value(const autograd::Variable& v, const std::vector<bool>& add, cluster::WorkerGroup* group,
                   WholeCopy copy);

}  // namespace chorus::models
