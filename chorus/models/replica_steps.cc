// Model's steps under a distribution (DESIGN.md §3): each global batch is split into
// per-replica slices (views, no copies) that run train_step/test_step/predict_step
// concurrently on the replica threads; then the replicas' metric states are merged into
// the model's in replica order — and in a multi-worker job every worker's in rank order,
// after each step or, when no callback reads batch logs, once an epoch — so what fit
// reports is exact and reproducible. The first step of a multi-worker job checks that the
// workers agree on the model and copies rank 0's weights to all.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "chorus/autograd/tape.h"
#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/distribute/distribution.h"
#include "chorus/distribute/mesh_runner.h"
#include "chorus/distribute/model_parallel.h"
#include "chorus/distribute/replica_runner.h"
#include "chorus/distribute/sparse_exchange.h"
#include "chorus/distribute/startup_check.h"
#include "chorus/distribute/worker_group.h"
#include "chorus/models/model.h"
#include "chorus/models/state_bytes.h"
#include "chorus/models/training_signature.h"
#include "chorus/models/worker_input.h"
#include "chorus/ops/ops.h"

namespace chorus::models {
namespace {

// Raw bytes as float32 words for the Gloo collectives, which move floats bit for bit.
Tensor words_for(size_t bytes) { return Tensor::empty({static_cast<int64_t>((bytes + 3) / 4)}, kFloat32); }

// Rank 0's values of `variables`, copied into every worker's in one broadcast.
void broadcast_from_chief(const std::vector<Variable>& variables, distribute::Communicator& workers) {
  size_t bytes = 0;
  for (const Variable& v : variables) bytes += v.value().nbytes();
  Tensor buffer = words_for(bytes);
  auto* out = static_cast<char*>(buffer.raw_data());
  for (const Variable& v : variables) {
    const Tensor value = v.value();
    std::memcpy(out, value.raw_data(), value.nbytes());
    out += value.nbytes();
  }
  workers.broadcast(buffer, 0);
  const auto* in = static_cast<const char*>(buffer.raw_data());
  for (const Variable& v : variables) {
    Tensor value = Tensor::empty(v.shape(), v.dtype());
    std::memcpy(value.raw_data(), in, value.nbytes());
    in += value.nbytes();
    v.assign(value);
  }
}

// The rows of the global batch in input order, from every worker's `local` output rows (a
// leaf of predict's result): slice g of the batch has rows[g] rows and is worker
// slice_workers[g]'s, which holds its slices' rows in order.
Tensor gather_rows(const Tensor& local, const std::vector<int64_t>& rows, const std::vector<int>& slice_workers,
                   distribute::Communicator& workers) {
  Shape row = local.shape();
  row[0] = 1;
  const int64_t row_bytes = row.numel() * static_cast<int64_t>(dtype_size(local.dtype()));
  std::vector<int64_t> worker_rows(static_cast<size_t>(workers.size()));
  for (size_t g = 0; g < rows.size(); ++g) worker_rows[static_cast<size_t>(slice_workers[g])] += rows[g];
  if (local.dim(0) != worker_rows[static_cast<size_t>(workers.rank())]) {
    throw_error<Error>("predict: this worker computed {} rows, where its slices of the batch hold {}", local.dim(0),
                       worker_rows[static_cast<size_t>(workers.rank())]);
  }
  const int64_t most = *std::max_element(worker_rows.begin(), worker_rows.end());
  Tensor mine = words_for(static_cast<size_t>(most * row_bytes));
  if (local.nbytes() > 0) std::memcpy(mine.raw_data(), local.raw_data(), local.nbytes());
  Tensor all = Tensor::empty({mine.numel() * workers.size()}, kFloat32);
  workers.all_gather(mine, all);
  Shape joined_shape = local.shape();
  joined_shape[0] = 0;
  for (int64_t r : rows) joined_shape[0] += r;
  Tensor joined = Tensor::empty(joined_shape, local.dtype());
  auto* out = static_cast<char*>(joined.raw_data());
  std::vector<int64_t> taken(static_cast<size_t>(workers.size()));  // bytes of each worker's block used so far
  for (size_t g = 0; g < rows.size(); ++g) {
    const auto w = static_cast<size_t>(slice_workers[g]);
    const auto* block = static_cast<const char*>(all.raw_data()) + static_cast<int64_t>(w) * mine.numel() * 4;
    if (rows[g] > 0) std::memcpy(out, block + taken[w], static_cast<size_t>(rows[g] * row_bytes));
    out += rows[g] * row_bytes;
    taken[w] += rows[g] * row_bytes;
  }
  return joined;
}

}  // namespace

distribute::StepRunner* Model::replica_runner() {
  const std::shared_ptr<distribution::Distribution> dist = compiled() ? distribution_ : distribution::distribution();
  if (!dist) return nullptr;
  if (auto model_parallel = std::dynamic_pointer_cast<const distribution::ModelParallel>(dist)) {
    if (dist->device_mesh().devices().size() <= 1) return nullptr;
    if (!runner_) runner_ = std::make_unique<distribute::MeshRunner>(model_parallel);
    return runner_.get();
  }
  if (dist->num_replicas() <= 1) return nullptr;
  if (!runner_) runner_ = std::make_unique<distribute::ReplicaRunner>(dist->replica_pool(), dist->workers());
  return runner_.get();
}

void Model::place_on_mesh(distribute::MeshRunner& runner, const Tree& batch) {
  if (placed_on_mesh_) return;
  build_on_first_row(batch);
  const auto& dist = dynamic_cast<const distribution::ModelParallel&>(*distribution_);
  std::vector<std::pair<Variable, distribution::VariablePlacement>> placements;
  for (const Variable& v : weights()) placements.emplace_back(v, dist.placement(v));  // checks every layout first
  if (compiled()) {
    optimizer().build(trainable_weights());
    // A slot follows its variable's layout; with shard_optimizer_state, a replicated
    // variable's slots are split over the batch axis.
    const int batch = dist.batch_axis();
    const int64_t batch_size = dist.device_mesh().shape()[static_cast<size_t>(batch)];
    const size_t model_variables = placements.size();
    for (size_t k = 0; k < model_variables; ++k) {
      const auto [v, p] = placements[k];
      distribution::VariablePlacement placement = p;
      if (!p.axis && dist.options().shard_optimizer_state && batch_size > 1 && v.shape().rank() > 0 &&
          v.shape()[0] % batch_size == 0 && !optimizer().slots_of(v).empty()) {
        placement = distribution::VariablePlacement{batch, 0};
        runner.update_by_rows(v);
      }
      for (const Variable& slot : optimizer().slots_of(v)) placements.emplace_back(slot, placement);
    }
    placements.emplace_back(optimizer().variables()[0], distribution::VariablePlacement{});  // iterations
  }
  for (const auto& [v, p] : placements) runner.place(v, p);
  placed_on_mesh_ = true;
  check_device_memory(*this);
  memory_checked_ = true;
}

distribute::WorkerGroup* Model::step_workers() {
  distribute::StepRunner* runner = replica_runner();
  return runner != nullptr ? runner->workers() : nullptr;
}

// Under data parallelism across workers, each worker keeps its block of rows of the tables
// that ask to be split (DistributedEmbedding's), and of their optimizer slots if built.
void Model::split_tables_across_workers(distribute::WorkerGroup& group) {
  for (const Variable& v : weights()) {
    if (!v.splits_rows_across_workers() || v.row_shard() || group.size() < 2) continue;
    const int64_t rows = distribute::rows_per_worker(v.shape()[0], group.size());
    v.keep_rows(group.rank() * rows, rows);
    if (compiled() && optimizer().built()) {
      for (const Variable& slot : optimizer().slots_of(v)) slot.keep_rows(group.rank() * rows, rows);
    }
  }
}

void Model::sync_workers(const Tree& batch, int64_t global_rows) {
  distribute::WorkerGroup* group = runner_->workers();
  if (workers_synced_ || group == nullptr) return;
  // A subclassed model builds on its first call (and compute_loss's layers on the first
  // loss): run both on one row so that the check and the broadcast see every weight.
  if (!built()) build_on_first_row(batch);
  std::vector<Variable> variables = weights();
  std::vector<std::string> signature = training_signature(*this, global_rows);
  if (const auto* mesh = dynamic_cast<const distribution::ModelParallel*>(distribution_.get())) {
    std::string devices;
    for (const Device& d : mesh->device_mesh().devices()) devices += (devices.empty() ? "" : ", ") + d.to_string();
    signature.push_back(fmt::format("a mesh of {} of {} devices: {}", mesh->device_mesh().devices().size(),
                                    mesh->mesh_spans_workers() ? "the job's" : "each worker's", devices));
    for (const Variable& v : weights()) {  // the workers must split every variable alike
      const distribution::VariablePlacement p = mesh->placement(v);
      signature.push_back(p.axis ? fmt::format("{} split along dimension {} over mesh axis '{}'", v.path(), p.dim,
                                               mesh->device_mesh().axis_names()[static_cast<size_t>(*p.axis)])
                                 : v.path() + " replicated");
    }
  }
  if (compiled()) {
    size_t slots = 0;
    for (const Variable& v : optimizer().variables()) {
      variables.push_back(v);
      slots += static_cast<size_t>(v.shape().numel()) * dtype_size(v.dtype());
    }
    signature.push_back(fmt::format("optimizer state {} bytes", slots));
  }
  distribute::check_same_signature(group->store(), group->cluster(), signature, "model");
  broadcast_from_chief(variables, group->communicator());
  // Whole until now, so rank 0's initial tables are every worker's; then each keeps its rows.
  if (dynamic_cast<const distribution::ModelParallel*>(distribution_.get()) == nullptr) split_tables_across_workers(*group);
  workers_synced_ = true;
}

int Model::run_replicas(const WorkerInput::Step& input, bool training, StepMetrics step_metrics,
                        const std::function<void(int replica, const Tree& slice)>& step) {
  const Tree& batch = input.batch;
  distribute::StepRunner& runner = *replica_runner();
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
    const int64_t rows = batch_rows(batch, name());
    const int64_t global_rows = input.global_rows.value_or(rows);
    sync_workers(batch, global_rows);
    if (auto* mesh = dynamic_cast<distribute::MeshRunner*>(&runner)) place_on_mesh(*mesh, batch);
    const std::optional<int64_t> own_rows = input.global_rows ? std::optional<int64_t>(rows) : std::nullopt;
    active = runner.run(global_rows, own_rows, training, [&](int replica, int64_t begin, int64_t end) {
      step(replica, batch.map([&](const Tensor& t) { return t.first_axis_slice(begin, end); }));
    });
  } catch (...) {
    for (auto& copies : replica_metrics_) {
      for (auto& m : copies) m->reset_state();
    }
    throw;
  }
  if (step_metrics == StepMetrics::kNone) return active;
  distribute::WorkerGroup* group = runner.workers();
  if (group == nullptr) {
    for (int r = 0; r < active; ++r) {
      auto& copies = replica_metrics_[static_cast<size_t>(r)];
      for (size_t k = 0; k < merged.size(); ++k) {
        if (runner.reports(r)) merged[k]->merge_state(copies[k]->state());
        copies[k]->reset_state();
      }
    }
    return active;
  }
  // This worker's share of the step, added to its unmerged states; then, if asked, every
  // worker's merged in rank order.
  size_t states = 0;
  for (const metrics::Metric* m : merged) states += m->state().size();
  std::vector<double>& mine = unmerged_worker_states_;
  if (mine.size() != states) mine.assign(states, 0.0);
  size_t at = 0;
  for (size_t k = 0; k < merged.size(); ++k) {
    for (int r = 0; r < active; ++r) {
      auto& copy = *replica_metrics_[static_cast<size_t>(r)][k];
      if (runner.reports(r)) {
        for (size_t i = 0; i < copy.state().size(); ++i) mine[at + i] += copy.state()[i];
      }
      copy.reset_state();
    }
    at += merged[k]->state().size();
  }
  worker_states_pending_ = true;
  if (step_metrics == StepMetrics::kAllWorkers) merge_worker_metrics();
  return active;
}

bool Model::merge_every_step(bool here) {
  distribute::WorkerGroup* group = step_workers();
  if (group == nullptr) return true;
  Tensor asked = full({1}, here ? 1.0 : 0.0);
  group->communicator().all_reduce(asked);
  return asked.item<float>() > 0;
}

void Model::merge_worker_metrics() {
  distribute::WorkerGroup* group = step_workers();
  if (group == nullptr || !worker_states_pending_) return;
  const std::vector<metrics::Metric*> merged = metrics();
  std::vector<double>& mine = unmerged_worker_states_;
  Tensor words = words_for(mine.size() * sizeof(double));
  std::memcpy(words.raw_data(), mine.data(), mine.size() * sizeof(double));
  Tensor all = Tensor::empty({words.numel() * group->size()}, kFloat32);
  group->communicator().all_gather(words, all);
  for (int w = 0; w < group->size(); ++w) {
    const auto* state = reinterpret_cast<const double*>(all.data<float>() + w * words.numel());
    for (metrics::Metric* metric : merged) {
      metric->merge_state(std::span<const double>(state, metric->state().size()));
      state += metric->state().size();
    }
  }
  std::fill(mine.begin(), mine.end(), 0.0);
  worker_states_pending_ = false;
}

Logs Model::run_train_step(const WorkerInput::Step& input, bool merge_workers) {
  distribute::StepRunner* runner = replica_runner();
  if (!memory_checked_ && dynamic_cast<distribute::MeshRunner*>(runner) == nullptr && device_memory_limit()) {
    // Every device holds the whole state: build it now to count it (place_on_mesh checks
    // the shards of a mesh).
    if (!built()) build_on_first_row(input.batch);
    optimizer().build(trainable_weights());
    check_device_memory(*this);
    memory_checked_ = true;
  }
  if (runner == nullptr) return train_step(input.batch);
  const bool rows = input.global_rows.value_or(batch_rows(input.batch, name())) > 0;
  const StepMetrics step_metrics = merge_workers ? StepMetrics::kAllWorkers : StepMetrics::kThisWorker;
  run_replicas(input, /*training=*/true, step_metrics, [&](int, const Tree& slice) {
    if (!rows || batch_rows(slice, name()) > 0) {
      train_step(slice);
      return;
    }
    // This worker has no rows of the batch: it adds zero gradients to the reduction and
    // applies the same update as the others.
    std::vector<Variable> variables = trainable_weights();
    std::vector<Tensor> none;
    for (const Variable& v : variables) none.push_back(zeros(v.shape(), v.dtype()));
    optimizer().apply_gradients(none, variables);
  });
  return merge_workers || step_workers() == nullptr ? get_metrics_result() : Logs{};
}

Logs Model::run_test_step(const WorkerInput::Step& input, bool merge_workers) {
  if (replica_runner() == nullptr) return test_step(input.batch);
  const bool rows = input.global_rows.value_or(batch_rows(input.batch, name())) > 0;
  const StepMetrics step_metrics = merge_workers ? StepMetrics::kAllWorkers : StepMetrics::kThisWorker;
  run_replicas(input, /*training=*/false, step_metrics, [&](int, const Tree& slice) {
    if (!rows || batch_rows(slice, name()) > 0) test_step(slice);  // a worker without rows adds nothing
  });
  return merge_workers || step_workers() == nullptr ? get_metrics_result() : Logs{};
}

Tree Model::run_predict_step(const Tree& batch) {
  distribute::StepRunner* runner = replica_runner();
  if (runner == nullptr) return predict_step(batch);
  std::vector<Tree> outputs(static_cast<size_t>(runner->num_replicas()));
  const int active = run_replicas({batch, std::nullopt}, /*training=*/false, StepMetrics::kNone,
                                  [&](int replica, const Tree& slice) {
    outputs[static_cast<size_t>(replica)] = predict_step(slice);
  });
  // Replica order is row order: concatenating the slices' outputs keeps the input order.
  std::vector<int> reporting;
  for (int r = 0; r < active; ++r) {
    if (runner->reports(r)) reporting.push_back(r);
  }
  // A worker of a mesh that spans workers may report no rows: its part is empty.
  std::vector<Tensor> joined = outputs[0].flatten();
  for (size_t leaf = 0; leaf < joined.size(); ++leaf) {
    std::vector<Tensor> parts;
    for (int r : reporting) parts.push_back(outputs[static_cast<size_t>(r)].flatten()[leaf]);
    joined[leaf] = parts.empty()       ? joined[leaf].first_axis_slice(0, 0)
                   : parts.size() == 1 ? parts[0]
                                       : ops::concatenate(parts, 0);
  }
  if (distribute::WorkerGroup* group = runner->workers()) {
    // Every worker returns the whole batch's predictions, as on one process.
    const std::vector<int> slice_workers = runner->slice_workers();
    std::vector<int64_t> rows;
    for (const auto& [begin, end] : distribute::ReplicaRunner::split(batch_rows(batch, name()), static_cast<int>(slice_workers.size()))) {
      rows.push_back(end - begin);
    }
    for (Tensor& leaf : joined) leaf = gather_rows(leaf, rows, slice_workers, group->communicator());
  }
  return outputs[0].unflatten(joined);
}

}  // namespace chorus::models
