// Model's steps under a distribution (DESIGN.md §3): each global batch is split into
// per-replica slices (views, no copies) that run train_step/test_step/predict_step
// concurrently on the replica threads; then the replicas' metric states are merged into
// the model's in replica order, so what fit reports is exact and reproducible.
#include "chorus/core/error.h"
#include "chorus/distribute/distribution.h"
#include "chorus/distribute/replica_runner.h"
#include "chorus/models/model.h"
#include "chorus/ops/ops.h"

namespace chorus::models {
namespace {

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

}  // namespace

distribute::ReplicaRunner* Model::replica_runner() {
  const std::shared_ptr<distribution::Distribution> dist = compiled() ? distribution_ : distribution::distribution();
  if (!dist || dist->num_replicas() <= 1) return nullptr;
  if (!runner_) runner_ = std::make_unique<distribute::ReplicaRunner>(dist->replica_pool());
  return runner_.get();
}

int Model::run_replicas(const Tree& batch, const std::function<void(int replica, const Tree& slice)>& step) {
  distribute::ReplicaRunner& runner = *replica_runner();
  const std::vector<metrics::Metric*> merged = metrics();
  if (replica_metrics_.size() != static_cast<size_t>(runner.num_replicas())) {
    replica_metrics_.clear();
    replica_metrics_.resize(static_cast<size_t>(runner.num_replicas()));
    for (auto& copies : replica_metrics_) {
      for (const metrics::Metric* m : merged) copies.push_back(m->clone());
    }
  }
  int active = 0;
  try {
    active = runner.run(batch_rows(batch, name()), [&](int replica, int64_t begin, int64_t end) {
      step(replica, batch.map([&](const Tensor& t) { return t.first_axis_slice(begin, end); }));
    });
  } catch (...) {
    for (auto& copies : replica_metrics_) {
      for (auto& m : copies) m->reset_state();
    }
    throw;
  }
  for (int r = 0; r < active; ++r) {
    auto& copies = replica_metrics_[static_cast<size_t>(r)];
    for (size_t k = 0; k < merged.size(); ++k) {
      merged[k]->merge_state(copies[k]->state());
      copies[k]->reset_state();
    }
  }
  return active;
}

Logs Model::run_train_step(const Tree& batch) {
  if (replica_runner() == nullptr) return train_step(batch);
  run_replicas(batch, [&](int, const Tree& slice) { train_step(slice); });
  return get_metrics_result();
}

Logs Model::run_test_step(const Tree& batch) {
  if (replica_runner() == nullptr) return test_step(batch);
  run_replicas(batch, [&](int, const Tree& slice) { test_step(slice); });
  return get_metrics_result();
}

Tree Model::run_predict_step(const Tree& batch) {
  distribute::ReplicaRunner* runner = replica_runner();
  if (runner == nullptr) return predict_step(batch);
  std::vector<Tree> outputs(static_cast<size_t>(runner->num_replicas()));
  const int active = run_replicas(batch, [&](int replica, const Tree& slice) {
    outputs[static_cast<size_t>(replica)] = predict_step(slice);
  });
  if (active == 1) return outputs[0];
  // Replica order is row order: concatenating the slices' outputs keeps the input order.
  std::vector<Tensor> joined = outputs[0].flatten();
  for (size_t leaf = 0; leaf < joined.size(); ++leaf) {
    std::vector<Tensor> parts;
    for (int r = 0; r < active; ++r) parts.push_back(outputs[static_cast<size_t>(r)].flatten()[leaf]);
    joined[leaf] = ops::concatenate(parts, 0);
  }
  return outputs[0].unflatten(joined);
}

}  // namespace chorus::models
