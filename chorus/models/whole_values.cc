#include "chorus/models/whole_values.h"

#include "chorus/core/error.h"
#include "chorus/distribute/worker_group.h"

namespace chorus::models {

io::NamedTensors whole_values(const std::vector<autograd::Variable>& variables, distribute::WorkerGroup* group,
                              bool copy) {
  io::NamedTensors out;
  for (const autograd::Variable& v : variables) {
    const auto& shard = v.row_shard();
    if (!shard) {
      out.emplace_back(v.path(), copy ? v.value().clone() : v.value());
      continue;
    }
    if (group == nullptr || v.dtype() != kFloat32) {
      throw_error<ValueError>("saving '{}': a variable split by rows across workers is gathered over its job, "
                              "and only as float32 (got {}{})",
                              v.path(), dtype_name(v.dtype()), group == nullptr ? ", and no job" : "");
    }
    const Tensor block = v.value();
    Shape all_shape = block.shape();
    all_shape[0] *= group->size();
    Tensor all = Tensor::empty(all_shape, kFloat32);
    group->communicator().all_gather(block.view(Shape{block.numel()}), all.view(Shape{all.numel()}));
    out.emplace_back(v.path(), all.first_axis_slice(0, shard->whole_shape[0]));  // the last block's padding dropped
  }
  return out;
}

}  // namespace chorus::models
