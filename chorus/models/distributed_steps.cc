// DistributedSteps (distributed_steps.h): each global batch is split into
// per-replica slices (views, no copies) that run train_step/test_step/predict_step
// concurrently on the replica threads; then the replicas' metric states are merged into
// the model's in replica order — and in a multi-worker job every worker's in rank order,
// after each step or, when no callback reads batch logs, once an epoch — so what fit
// reports is exact and reproducible. The first step of a multi-worker job checks that the
// workers agree on the model and copies rank 0's weights to all.
#include "chorus/models/distributed_steps.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "chorus/autograd/tape.h"
#include "chorus/cluster/startup_check.h"
#include "chorus/cluster/worker_group.h"
#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/core/storage.h"
#include "chorus/distribution/distribution.h"
#include "chorus/distribution/model_parallel.h"
#include "chorus/models/model.h"
#include "chorus/models/state_bytes.h"
#include "chorus/models/training_signature.h"
#include "chorus/models/whole_values.h"
#include "chorus/models/worker_input.h"
#include "chorus/ops/ops.h"
#include "chorus/profiler/profiler.h"
#include "chorus/replicas/mesh_runner.h"
#include "chorus/replicas/replica_runner.h"
#include "chorus/replicas/sparse_exchange.h"
#include "chorus/step/step_context.h"

namespace chorus::models {
namespace {

// "<layer path>/output" for `layer` and every layer under it: the keys of output layouts.
void collect_output_paths(const layers::Layer& layer, std::set<const layers::Layer*>& seen,
                          std::vector<std::string>& out) {
  if (!seen.insert(&layer).second) return;
  out.push_back(layer.path() + "/output");
  for (const layers::Layer* sublayer : layer.layers()) collect_output_paths(*sublayer, seen, out);
}

// Refuses a LayoutMap key that lays out nothing of the model (a renamed layer).
void check_layout_keys(const distribution::ModelParallel& dist, const Model& model) {
  std::vector<std::string> variable_paths, output_paths;
  for (const Variable& v : model.weights()) variable_paths.push_back(v.path());
  std::set<const layers::Layer*> seen;
  collect_output_paths(model, seen, output_paths);
  dist.check_layout_keys(variable_paths, output_paths);
}

// Rank 0's values of `variables`, copied into every worker's in one broadcast.
void broadcast_from_chief(const std::vector<Variable>& variables, comm::Communicator& workers) {
  size_t bytes = 0;
  for (const Variable& v : variables) bytes += v.value().nbytes();
  std::vector<std::byte> buffer(bytes);
  std::byte* out = buffer.data();
  for (const Variable& v : variables) {
    const Tensor value = v.value();
    std::memcpy(out, value.raw_data(), value.nbytes());
    out += value.nbytes();
  }
  workers.broadcast(std::span(buffer), 0);
  const std::byte* in = buffer.data();
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
                   comm::Communicator& workers) {
  Shape row = local.shape();
  row[0] = 1;
  const int64_t row_bytes = row.numel() * static_cast<int64_t>(dtype_size(local.dtype()));
  std::vector<int64_t> worker_rows(static_cast<size_t>(workers.size()));
  for (size_t g = 0; g < rows.size(); ++g) worker_rows[static_cast<size_t>(slice_workers[g])] += rows[g];
  if (local.dim(0) != worker_rows[static_cast<size_t>(workers.rank())]) {
    throw_error<Error>("predict: this worker computed {} rows, where its slices of the batch hold {}", local.dim(0),
                       worker_rows[static_cast<size_t>(workers.rank())]);
  }
  const std::vector<std::vector<std::byte>> all = workers.all_gather_bytes(
      std::span(static_cast<const std::byte*>(local.raw_data()), static_cast<size_t>(local.nbytes())));
  Shape joined_shape = local.shape();
  joined_shape[0] = 0;
  for (int64_t r : rows) joined_shape[0] += r;
  Tensor joined = Tensor::empty(joined_shape, local.dtype());
  auto* out = static_cast<std::byte*>(joined.raw_data());
  std::vector<int64_t> taken(static_cast<size_t>(workers.size()));  // bytes of each worker's block used so far
  for (size_t g = 0; g < rows.size(); ++g) {
    const auto w = static_cast<size_t>(slice_workers[g]);
    if (rows[g] > 0) std::memcpy(out, all[w].data() + taken[w], static_cast<size_t>(rows[g] * row_bytes));
    out += rows[g] * row_bytes;
    taken[w] += rows[g] * row_bytes;
  }
  return joined;
}

}  // namespace

DistributedSteps::DistributedSteps(Model& model) : model_(model) {}
DistributedSteps::~DistributedSteps() = default;

void DistributedSteps::reset_worker_states() {
  std::fill(unmerged_worker_states_.begin(), unmerged_worker_states_.end(), 0.0);
  worker_states_pending_ = false;
}

void DistributedSteps::release_placement() {
  auto* mesh = dynamic_cast<replicas::MeshRunner*>(runner_.get());
  if (mesh == nullptr || !mesh->spans_workers()) return;
  // The variables split over several workers' devices go back whole on every worker (the
  // runner alone cannot: it takes a collective).
  const io::NamedTensors wholes = whole_values(mesh->placed(), mesh->workers());
  for (size_t i = 0; i < wholes.size(); ++i) mesh->placed()[i].gather_device_values(wholes[i].second);
}

replicas::StepRunner* DistributedSteps::step_runner() {
  const std::shared_ptr<distribution::Distribution> dist =
      model_.compiled() ? model_.distribution() : distribution::distribution();
  if (!dist) return nullptr;
  // A DataParallel that shards makes its mesh form anew each time: once, not every step.
  if (dynamic_cast<replicas::MeshRunner*>(runner_.get()) != nullptr) return runner_.get();
  if (auto model_parallel = distribution::mesh_form(dist)) {
    if (dist->device_mesh().devices().size() <= 1) return nullptr;
    if (!runner_) runner_ = std::make_unique<replicas::MeshRunner>(model_parallel);
    return runner_.get();
  }
  if (dist->num_replicas() <= 1) return nullptr;
  if (!runner_) runner_ = std::make_unique<replicas::ReplicaRunner>(replicas::replica_pool_of(*dist), dist->workers());
  return runner_.get();
}

void DistributedSteps::place_on_mesh(replicas::MeshRunner& runner, const Tree& batch) {
  if (placed_on_mesh_) return;
  model_.build_on_first_row(batch);
  const distribution::ModelParallel& dist = runner.distribution();
  check_layout_keys(dist, model_);
  std::vector<std::pair<Variable, distribution::VariablePlacement>> placements;
  // Every layout is checked before any variable moves.
  for (const Variable& v : model_.weights()) placements.emplace_back(v, dist.placement(v));
  for (const auto& [v, p] : placements) runner.place(v, p);
  // The whole values are gone from the devices: back to the system before the slots are
  // made, which follow their variables' blocks where those are split.
  release_cached_host_memory();
  if (model_.compiled()) {
    model_.optimizer().build(model_.trainable_weights());
    // A slot follows its variable's layout; with a Shard, a replicated variable's slots are
    // split over the batch axis (ZeRO-1 and 2; a variable Shard::kFull could not split).
    const int batch = dist.batch_axis();
    const int64_t batch_size = dist.device_mesh().shape()[static_cast<size_t>(batch)];
    const size_t model_variables = placements.size();
    for (size_t k = 0; k < model_variables; ++k) {
      const auto [v, p] = placements[k];
      distribution::VariablePlacement placement = p;
      if (!p.axis && dist.options().shard != distribution::Shard::kNone && batch_size > 1 && v.shape().rank() > 0 &&
          v.shape()[0] % batch_size == 0 && !model_.optimizer().slots_of(v).empty()) {
        placement = distribution::VariablePlacement{batch, 0};
        runner.update_by_rows(v);
      }
      for (const Variable& slot : model_.optimizer().slots_of(v)) placements.emplace_back(slot, placement);
    }
    placements.emplace_back(model_.optimizer().variables()[0], distribution::VariablePlacement{});  // iterations
    for (size_t k = model_variables; k < placements.size(); ++k) runner.place(placements[k].first, placements[k].second);
  }
  placed_on_mesh_ = true;
  check_device_memory(model_);
  memory_checked_ = true;
}

cluster::WorkerGroup* DistributedSteps::workers() {
  replicas::StepRunner* runner = step_runner();
  return runner != nullptr ? runner->workers() : nullptr;
}

// Under data parallelism across workers, each worker keeps its block of rows of the tables
// that ask to be split (DistributedEmbedding's), and of their optimizer slots if built.
void DistributedSteps::split_tables_across_workers(cluster::WorkerGroup& group) {
  for (const Variable& v : model_.weights()) {
    if (!v.splits_rows_across_workers() || v.row_shard() || group.size() < 2) continue;
    const int64_t rows = replicas::rows_per_worker(v.shape()[0], group.size());
    v.keep_rows(group.rank() * rows, rows);
    if (model_.compiled() && model_.optimizer().built()) {
      for (const Variable& slot : model_.optimizer().slots_of(v)) slot.keep_rows(group.rank() * rows, rows);
    }
  }
}

void DistributedSteps::sync_workers(const Tree& batch, int64_t global_rows) {
  cluster::WorkerGroup* group = runner_->workers();
  if (workers_synced_ || group == nullptr) return;
  // A subclassed model builds on its first call (and compute_loss's layers on the first
  // loss): run both on one row so that the check and the broadcast see every weight.
  if (!model_.built()) model_.build_on_first_row(batch);
  std::vector<Variable> variables = model_.weights();
  std::vector<std::string> signature = training_signature(model_, global_rows);
  if (auto* mesh_runner = dynamic_cast<replicas::MeshRunner*>(runner_.get())) {
    const distribution::ModelParallel* mesh = &mesh_runner->distribution();
    check_layout_keys(*mesh, model_);  // before the workers' first collective
    std::string devices;
    for (const Device& d : mesh->device_mesh().devices()) devices += (devices.empty() ? "" : ", ") + d.to_string();
    signature.push_back(fmt::format("a mesh of {} of {} devices: {}", mesh->device_mesh().devices().size(),
                                    mesh->mesh_spans_workers() ? "the job's" : "each worker's", devices));
    for (const Variable& v : model_.weights()) {  // the workers must split every variable alike
      const distribution::VariablePlacement p = mesh->placement(v);
      signature.push_back(p.axis ? fmt::format("{} split along dimension {} over mesh axis '{}'", v.path(), p.dim,
                                               mesh->device_mesh().axis_names()[static_cast<size_t>(*p.axis)])
                                 : v.path() + " replicated");
    }
  }
  if (model_.compiled()) {
    size_t slots = 0;
    for (const Variable& v : model_.optimizer().variables()) {
      variables.push_back(v);
      slots += static_cast<size_t>(v.shape().numel()) * dtype_size(v.dtype());
    }
    signature.push_back(fmt::format("optimizer state {} bytes", slots));
  }
  cluster::check_same_signature(group->store(), group->cluster(), signature, "model");
  broadcast_from_chief(variables, group->communicator());
  // Whole until now, so rank 0's initial tables are every worker's; then each keeps its rows.
  if (dynamic_cast<replicas::MeshRunner*>(runner_.get()) == nullptr) {
    split_tables_across_workers(*group);
  }
  workers_synced_ = true;
}

int DistributedSteps::run_replicas(const WorkerInput::Step& input, bool training, StepMetrics step_metrics,
                        const std::function<void(int replica, const Tree& slice)>& step) {
  const Tree& batch = input.batch;
  replicas::StepRunner& runner = *step_runner();
  const std::vector<metrics::Metric*> merged = model_.metrics();
  if (replica_metrics_.size() != static_cast<size_t>(runner.num_replicas())) {
    replica_metrics_.clear();
    replica_metrics_.resize(static_cast<size_t>(runner.num_replicas()));
    for (auto& copies : replica_metrics_) {
      for (const metrics::Metric* m : merged) copies.push_back(m->clone());
    }
  }
  int active = 0;
  try {
    const int64_t rows = batch_rows(batch, model_.name());
    const int64_t global_rows = input.global_rows.value_or(rows);
    sync_workers(batch, global_rows);
    if (auto* mesh = dynamic_cast<replicas::MeshRunner*>(&runner)) place_on_mesh(*mesh, batch);
    const std::optional<int64_t> own_rows = input.global_rows ? std::optional<int64_t>(rows) : std::nullopt;
    active = runner.run(global_rows, own_rows, training, [&](step::ReplicaContext& replica, int64_t begin,
                                                             int64_t end) {
      const int r = replica.replica_id();
      const step::StepContext context{.replica = &replica, .metrics = replica_metrics_[static_cast<size_t>(r)]};
      const step::StepScope scope(&context);
      step(r, batch.map([&](const Tensor& t) { return t.first_axis_slice(begin, end); }));
    });
  } catch (...) {
    for (auto& copies : replica_metrics_) {
      for (auto& m : copies) m->reset_state();
    }
    throw;
  }
  if (step_metrics == StepMetrics::kNone) return active;
  cluster::WorkerGroup* group = runner.workers();
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

bool DistributedSteps::merge_every_step(bool here) {
  cluster::WorkerGroup* group = workers();
  if (group == nullptr) return true;
  int32_t asked = here ? 1 : 0;
  group->communicator().all_reduce(std::span(&asked, 1), comm::ReduceOp::kMax);
  return asked > 0;
}

void DistributedSteps::merge_worker_metrics() {
  cluster::WorkerGroup* group = workers();
  if (group == nullptr || !worker_states_pending_) return;
  const std::vector<metrics::Metric*> merged = model_.metrics();
  std::vector<double>& mine = unmerged_worker_states_;
  std::vector<double> all(mine.size() * static_cast<size_t>(group->size()));
  group->communicator().all_gather(std::span(mine), std::span(all));
  for (int w = 0; w < group->size(); ++w) {
    const double* state = all.data() + static_cast<size_t>(w) * mine.size();
    for (metrics::Metric* metric : merged) {
      metric->merge_state(std::span<const double>(state, metric->state().size()));
      state += metric->state().size();
    }
  }
  std::fill(mine.begin(), mine.end(), 0.0);
  worker_states_pending_ = false;
}

Logs DistributedSteps::train(const WorkerInput::Step& input, bool merge_workers) {
  profiler::Scope event("step", "train_step");
  replicas::StepRunner* runner = step_runner();
  if (!memory_checked_ && dynamic_cast<replicas::MeshRunner*>(runner) == nullptr && device_memory_limit()) {
    // Every device holds the whole state: build it now to count it (place_on_mesh checks
    // the shards of a mesh).
    if (!model_.built()) model_.build_on_first_row(input.batch);
    model_.optimizer().build(model_.trainable_weights());
    check_device_memory(model_);
    memory_checked_ = true;
  }
  if (runner == nullptr) return model_.train_step(input.batch);
  const bool rows = input.global_rows.value_or(batch_rows(input.batch, model_.name())) > 0;
  const StepMetrics step_metrics = merge_workers ? StepMetrics::kAllWorkers : StepMetrics::kThisWorker;
  run_replicas(input, /*training=*/true, step_metrics, [&](int, const Tree& slice) {
    if (!rows || batch_rows(slice, model_.name()) > 0) {
      model_.train_step(slice);
      return;
    }
    if (auto* mesh = dynamic_cast<replicas::MeshRunner*>(runner); mesh != nullptr && mesh->shards_over_batch_axis()) {
      // No rows here, but this device gathers and reduces along the batch axis as the step
      // goes: it runs the step on the batch's first row, which its replica weighs zero,
      // with metrics of its own that nobody reads.
      std::vector<std::unique_ptr<metrics::Metric>> unread;
      for (const metrics::Metric* m : model_.metrics()) unread.push_back(m->clone());
      const step::StepContext stand_in{.replica = step::StepContext::current()->replica, .metrics = unread};
      const step::StepScope scope(&stand_in);
      model_.train_step(input.batch.map([](const Tensor& t) { return t.first_axis_slice(0, 1); }));
      return;
    }
    // This worker has no rows of the batch: it adds zero gradients to the reduction and
    // applies the same update as the others.
    std::vector<Variable> variables = model_.trainable_weights();
    std::vector<Tensor> none;
    for (const Variable& v : variables) none.push_back(zeros(v.shape(), v.dtype()));
    model_.optimizer().apply_gradients(none, variables);
  });
  return merge_workers || workers() == nullptr ? model_.get_metrics_result() : Logs{};
}

Logs DistributedSteps::test(const WorkerInput::Step& input, bool merge_workers) {
  profiler::Scope event("step", "test_step");
  if (step_runner() == nullptr) return model_.test_step(input.batch);
  const bool rows = input.global_rows.value_or(batch_rows(input.batch, model_.name())) > 0;
  const StepMetrics step_metrics = merge_workers ? StepMetrics::kAllWorkers : StepMetrics::kThisWorker;
  run_replicas(input, /*training=*/false, step_metrics, [&](int, const Tree& slice) {
    if (!rows || batch_rows(slice, model_.name()) > 0) model_.test_step(slice);  // a worker without rows adds nothing
  });
  return merge_workers || workers() == nullptr ? model_.get_metrics_result() : Logs{};
}

Tree DistributedSteps::predict(const Tree& batch) {
  profiler::Scope event("step", "predict_step");
  replicas::StepRunner* runner = step_runner();
  if (runner == nullptr) return model_.predict_step(batch);
  std::vector<Tree> outputs(static_cast<size_t>(runner->num_replicas()));
  const int active = run_replicas({batch, std::nullopt}, /*training=*/false, StepMetrics::kNone,
                                  [&](int replica, const Tree& slice) {
    outputs[static_cast<size_t>(replica)] = model_.predict_step(slice);
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
  if (cluster::WorkerGroup* group = runner->workers()) {
    // Every worker returns the whole batch's predictions, as on one process.
    const std::vector<int> slice_workers = runner->slice_workers();
    std::vector<int64_t> rows;
    const int slices = static_cast<int>(slice_workers.size());
    for (const auto& [begin, end] : replicas::ReplicaRunner::split(batch_rows(batch, model_.name()), slices)) {
      rows.push_back(end - begin);
    }
    for (Tensor& leaf : joined) leaf = gather_rows(leaf, rows, slice_workers, group->communicator());
  }
  return outputs[0].unflatten(joined);
}

}  // namespace chorus::models
