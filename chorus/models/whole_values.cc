#include "chorus/models/whole_values.h"

#include <algorithm>

#include "chorus/cluster/worker_group.h"
#include "chorus/core/error.h"

namespace chorus::models {
namespace {

// A table split by rows across the workers: every worker's rows, the last block's padding dropped.
Tensor gather_row_blocks(const autograd::Variable& v, cluster::WorkerGroup& group) {
  const Tensor block = v.value();
  Shape all_shape = block.shape();
  all_shape[0] *= group.size();
  Tensor all = Tensor::empty(all_shape, block.dtype());
  group.communicator().all_gather(block.view(Shape{block.numel()}), all.view(Shape{all.numel()}));
  return all.first_axis_slice(0, v.row_shard()->whole_shape[0]);
}

// Under a mesh that spans the workers, each holds only some blocks of a sharded variable.
// For each of `variables`, the blocks this worker adds to the whole — those no worker of a
// lower rank holds — or an empty list where every worker holds every block (nothing to
// gather). Every worker sees the same holdings, so all agree on what to gather.
std::vector<std::vector<bool>> blocks_held_first_here(const std::vector<autograd::Variable>& variables,
                                                      cluster::WorkerGroup& group) {
  std::vector<std::vector<bool>> held;
  size_t count = 0;
  for (const autograd::Variable& v : variables) {
    held.push_back(v.held_blocks());
    count += held.back().size();
  }
  std::vector<uint8_t> mine;
  mine.reserve(count);
  for (const auto& blocks : held) mine.insert(mine.end(), blocks.begin(), blocks.end());
  std::vector<uint8_t> all(count * static_cast<size_t>(group.size()));
  group.communicator().all_gather(std::span(mine), std::span(all));
  std::vector<std::vector<bool>> out(variables.size());
  size_t offset = 0;
  for (size_t i = 0; i < variables.size(); ++i) {
    const size_t blocks = held[i].size();
    std::vector<bool> add(blocks, false);
    bool lacking = false;
    for (size_t k = 0; k < blocks; ++k) {
      int first = -1;
      for (int w = 0; w < group.size(); ++w) {
        const bool has = all[static_cast<size_t>(w) * count + offset + k] != 0;
        lacking = lacking || !has;
        if (has && first < 0) first = w;
      }
      add[k] = first == group.rank();
    }
    if (lacking) out[i] = std::move(add);
    offset += blocks;
  }
  return out;
}

}  // namespace

std::vector<std::vector<bool>> blocks_to_add(const std::vector<autograd::Variable>& variables,
                                             cluster::WorkerGroup* group) {
  const bool split_over_devices =
      std::any_of(variables.begin(), variables.end(), [](const autograd::Variable& v) { return v.distributed(); });
  if (group == nullptr || group->size() == 1 || !split_over_devices) {
    return std::vector<std::vector<bool>>(variables.size());
  }
  return blocks_held_first_here(variables, *group);
}

bool gathered_over_workers(const autograd::Variable& v, const std::vector<bool>& add) {
  return v.row_shard().has_value() || !add.empty();
}

Tensor whole_value(const autograd::Variable& v, const std::vector<bool>& add, cluster::WorkerGroup* group,
                   WholeCopy copy) {
  if (!gathered_over_workers(v, add)) {
    if (v.distributed() && copy != WholeCopy::kNone) {
      return v.whole_of_blocks(std::vector<bool>(v.held_blocks().size(), true), 0);
    }
    return copy == WholeCopy::kCopy ? v.value().clone() : v.value();
  }
  if (group == nullptr) {
    throw_error<ValueError>("saving '{}': a variable split across workers is gathered over its job, and there is "
                            "no job",
                            v.path());
  }
  if (v.row_shard()) return gather_row_blocks(v, *group);
  // Each block comes from one worker, the others add -0.0, which leaves every value's
  // bits as they are (x + -0.0 == x, +0.0 included; 0 for integers).
  Tensor whole = v.whole_of_blocks(add, -0.0);
  group->communicator().all_reduce(whole);
  return whole;
}

io::NamedTensors whole_values(const std::vector<autograd::Variable>& variables, cluster::WorkerGroup* group,
                              bool copy) {
  const std::vector<std::vector<bool>> added = blocks_to_add(variables, group);
  io::NamedTensors out;
  for (size_t i = 0; i < variables.size(); ++i) {
    out.emplace_back(variables[i].path(),
                     whole_value(variables[i], added[i], group, copy ? WholeCopy::kCopy : WholeCopy::kNone));
  }
  return out;
}

}  // namespace chorus::models
