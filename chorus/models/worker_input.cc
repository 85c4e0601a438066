#include "chorus/models/worker_input.h"

#include <algorithm>

#include "chorus/cluster/worker_group.h"
#include "chorus/core/error.h"
#include "chorus/data/auto_shard.h"

namespace chorus::models {

int64_t batch_rows(const Tree& batch, const std::string& model) {
  int64_t rows = -1;
  for (const Tensor& t : batch.flatten()) {
    if (t.rank() == 0) throw_error<ShapeError>("{}: every array of a batch needs a batch axis, got a scalar", model);
    if (rows >= 0 && t.dim(0) != rows) {
      throw_error<ValueError>("{}: the arrays of a batch have different numbers of rows: {} and {}", model, rows,
                              t.dim(0));
    }
    rows = t.dim(0);
  }
  return std::max<int64_t>(rows, 0);
}

WorkerInput::WorkerInput(const data::Dataset& dataset, cluster::WorkerGroup* workers, std::string model)
    : dataset_(dataset), workers_(workers), model_(std::move(model)) {
  if (workers_ == nullptr || workers_->size() < 2) return;
  // Every worker decides the same way: the pipeline and the worker count are the same.
  if (auto mine = data::shard_by_file(dataset, workers_->size(), workers_->rank(), nullptr)) {
    dataset_ = *mine;
    file_sharded_ = true;
  }
}

std::optional<WorkerInput::Step> WorkerInput::Pass::next() {
  std::optional<Tree> batch = iterator_.next();
  if (!input_->file_sharded_) {
    if (!batch) return std::nullopt;
    return Step{std::move(*batch), std::nullopt};
  }
  const int64_t rows = batch ? batch_rows(*batch, input_->model_) : 0;
  int64_t counts[2] = {batch ? 1 : 0, rows};  // workers with a batch, rows
  input_->workers_->communicator().all_reduce(std::span(counts));
  if (counts[0] == 0) return std::nullopt;
  const int64_t global_rows = counts[1];
  if (batch) {
    empty_ = batch->map([](const Tensor& t) { return t.first_axis_slice(0, 0); });
    return Step{std::move(*batch), global_rows};
  }
  if (empty_.flatten().empty()) {
    throw_error<ValueError>(
        "FILE sharding: worker {} of {} has no batch in its files while others do; give every worker at least one "
        "batch of lines (or fewer workers than files with data)",
        input_->workers_->rank(), input_->workers_->size());
  }
  return Step{empty_, global_rows};
}

}  // namespace chorus::models
