#include "chorus/replicas/gathered_variables.h"

#include "chorus/core/error.h"

namespace chorus::replicas {

void GatheredVariables::start(std::span<const autograd::Variable> placed,
                              const std::function<bool(const Sharding&)>& gathers) {
  for (const autograd::Variable& v : placed) {
    if (!v.trainable()) continue;  // an optimizer slot: read only in its own block's update
    const Tensor& block = v.device_values()[static_cast<size_t>(device_)];
    const Sharding* sharding = block.impl()->sharding.get();
    if (sharding == nullptr || !gathers(*sharding)) continue;
    Tensor whole = Tensor::empty(sharding->global_shape, block.dtype());
    whole.impl()->autograd.trainable = v.trainable();
    auto work = communicator_(sharding->axis).all_gather_async(shard_block(block), whole.view({whole.numel()}));
    gathered_.emplace(v.id(), Gathered{v, sharding->axis, std::move(whole), std::move(work)});
  }
}

const Tensor& GatheredVariables::value(const void* variable) {
  const auto it = gathered_.find(variable);
  if (it == gathered_.end()) throw Error("GatheredVariables: a variable split over the batch axis that was not placed");
  Gathered& gathered = it->second;
  wait(gathered);
  if (gathered.whole.impl()->storage == nullptr) {  // freed, and read again
    const Tensor fresh = Tensor::empty(gathered.whole.shape(), gathered.whole.dtype());
    gathered.whole.impl()->storage = fresh.impl()->storage;
    gathered.whole.impl()->offset = fresh.impl()->offset;
    const Tensor& block = gathered.variable.device_values()[static_cast<size_t>(device_)];
    communicator_(gathered.axis).all_gather(shard_block(block), gathered.whole.view({gathered.whole.numel()}));
  }
  return gathered.whole;
}

void GatheredVariables::free(const void* variable) {
  const auto it = gathered_.find(variable);
  if (it == gathered_.end()) return;
  wait(it->second);
  it->second.whole.impl()->storage.reset();
}

void GatheredVariables::finish(bool failed) {
  for (auto& [variable, gathered] : gathered_) {
    try {
      wait(gathered);
    } catch (const Error&) {
      if (!failed) throw;
    }
  }
  gathered_.clear();
}

void GatheredVariables::wait(Gathered& gathered) {
  if (!gathered.work) return;
  std::unique_ptr<comm::Work> work = std::move(gathered.work);
  work->wait();
}

}  // namespace chorus::replicas
