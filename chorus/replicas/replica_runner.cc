#include "chorus/replicas/replica_runner.h"

#include <atomic>
#include <unordered_map>

#include "chorus/autograd/tape.h"
#include "chorus/cluster/worker_group.h"
#include "chorus/core/creation.h"
#include "chorus/core/trace_observer.h"
#include "chorus/jit/tracer.h"
#include "chorus/ops/operators.h"
#include "chorus/replicas/sparse_exchange.h"
#include "chorus/step/replica_context.h"

namespace chorus::replicas {

// One replica's view of the current step.
class ReplicaRunner::Context final : public step::ReplicaContext {
 public:
  Context(int replica, int replicas, GradientReducer& reducer, UpdateTeam& team,
          const std::vector<std::unique_ptr<Context>>& peers)
      : step::ReplicaContext(replica, replicas), reducer_(reducer), team_(team), peers_(&peers) {}

  void begin_step(uint64_t step, uint64_t step_id, int64_t begin, int64_t end, int64_t rows,
                  comm::Communicator* communicator, comm::Communicator* workers) {
    set_slice(begin, end - begin, rows);
    step_ = step;
    step_id_ = step_id;
    communicator_ = communicator;
    workers_ = workers;
    calls_.clear();
    assigns_.clear();
    begun_ = false;
  }

  uint64_t call_in_step(const void* owner) override { return calls_[owner]++; }
  uint64_t step() const override { return step_id_; }

  autograd::GradientStreaming stream_gradients(std::span<const autograd::Variable> variables) override {
    if (jit::Tracer::current() != nullptr) return traced_streaming(variables);
    begin(variables);
    return reducer_.streaming(replica_id());
  }

  void apply_gradients(std::span<const Tensor> grads, std::span<const autograd::IndexedSlices> sparse,
                       std::span<const autograd::Variable> variables, const Update& update) override {
    if (!begun_) begin(variables);
    std::vector<Tensor> reduced = reducer_.finish(replica_id(), grads, variables);
    begun_ = false;
    // The tables left out of the reduction: this replica's rows, for replica 0 to gather
    // once every replica has handed over its own.
    bool any_rows = false;
    rows_.assign(variables.size(), autograd::IndexedSlices());
    for (size_t i = 0; i < variables.size(); ++i) {
      if (!reducer_.sparse(i)) continue;
      any_rows = true;
      const autograd::IndexedSlices none;
      const auto& shard = variables[i].row_shard();
      rows_[i] = scaled_rows(grads[i], i < sparse.size() ? sparse[i] : none,
                             shard ? shard->whole_shape : variables[i].shape(), scale());
    }
    if (any_rows) communicator_->barrier();
    // Every replica has finished its backward pass (the reductions needed all of them):
    // replica 0 updates the shared variables, and the others lend it their threads.
    // (Steps count from 1 for the team.)
    if (replica_id() == 0) {
      try {
        const std::vector<autograd::IndexedSlices> gathered = gather_rows(variables);
        backend::cpu::LentThreadsScope lent(&team_);
        update(reduced, gathered, variables);
      } catch (...) {  // ReplicaRunner::run releases the helpers as the step ends
        communicator_->abort("the optimizer update on replica 0 failed");
        throw;
      }
      team_.close(step_ + 1);
    } else {
      team_.serve(step_ + 1);
    }
    communicator_->barrier();
  }

  void run_once(const std::function<void()>& once) override {
    // Its results come from replica 0's thread and other workers: nothing a graph replays.
    note_cannot_trace("a collective across workers inside the step (ReplicaContext::run_once) has no compiled form");
    communicator_->barrier();
    if (replica_id() == 0) {
      try {
        once();
      } catch (...) {
        communicator_->abort("replica 0 failed in an exchange across workers");
        throw;
      }
    }
    communicator_->barrier();
  }
  comm::Communicator* workers() const override { return workers_; }

  void assign_mean(const autograd::Variable& variable, const Tensor& value) override {
    // A compiled step would replay without it (BatchNormalization calls it from a host node).
    note_cannot_trace("ReplicaContext::assign_mean outside a host node has no compiled form");
    assigns_.emplace_back(variable, value);
  }

  const std::vector<std::pair<autograd::Variable, Tensor>>& assigns() const { return assigns_; }

 private:
  // This replica's share of the global batch: the weight of its gradients.
  float scale() const {
    return static_cast<float>(static_cast<double>(local_rows()) / static_cast<double>(global_rows()));
  }

  void begin(std::span<const autograd::Variable> variables) {
    reducer_.begin(replica_id(), variables, scale(), communicator_, workers_);
    begun_ = true;
  }

  // The streaming of a traced step: the reducer's host code as nodes of the graph, run at
  // every step where the trace met them — the step's begin (this step's scale), then each
  // gradient packed and its bucket launched as soon as backward finishes it. Whole
  // gradients only: row blocks are written inside a kernel the graph does not see.
  autograd::GradientStreaming traced_streaming(std::span<const autograd::Variable> variables) {
    jit::launch_host("begin_gradient_reduction", {}, {},
                     [this, all = std::vector<autograd::Variable>(variables.begin(), variables.end())](auto, auto) {
                       begin(all);
                     });
    autograd::GradientStreaming streaming = reducer_.streaming(replica_id());
    streaming.ready = [this](size_t index, const Tensor& gradient) {
      const std::span<const Tensor> in = gradient.defined() ? std::span(&gradient, 1) : std::span<const Tensor>();
      jit::launch_host("reduce_gradient", in, {}, [this, index](auto in, auto) {
        reducer_.ready(replica_id(), index, in.empty() ? Tensor() : in[0]);
      });
    };
    streaming.row_ends = nullptr;
    streaming.rows_ready = nullptr;
    return streaming;
  }

  // On replica 0: every replica's rows of each table left out of the reduction, in
  // global replica order (this worker's replicas, then across workers).
  std::vector<autograd::IndexedSlices> gather_rows(std::span<const autograd::Variable> variables) const {
    std::vector<autograd::IndexedSlices> gathered(variables.size());
    for (size_t i = 0; i < variables.size(); ++i) {
      if (!reducer_.sparse(i)) continue;
      std::vector<autograd::IndexedSlices> parts;
      for (const auto& peer : *peers_) {
        // Replicas without rows sat this step out; their rows_ are an earlier step's.
        if (peer->step_ != step_ || peer->local_rows() == 0 || i >= peer->rows_.size()) continue;
        if (peer->rows_[i].defined()) parts.push_back(peer->rows_[i]);
      }
      if (!parts.empty()) gathered[i] = autograd::IndexedSlices::concatenate(parts);
      if (const auto& shard = variables[i].row_shard()) {  // each worker updates the rows it keeps
        gathered[i] = send_rows_to_keepers(gathered[i], shard->begin, variables[i].shape(), *workers_);
      } else if (workers_ != nullptr && workers_->size() > 1) {
        gathered[i] = gather_across_workers(gathered[i], variables[i].shape(), *workers_);
      }
    }
    return gathered;
  }

  GradientReducer& reducer_;
  UpdateTeam& team_;
  const std::vector<std::unique_ptr<Context>>* peers_;  // every replica's context, this one's included
  std::vector<autograd::IndexedSlices> rows_;            // this step's rows of the tables, per variable
  comm::Communicator* communicator_ = nullptr;
  comm::Communicator* workers_ = nullptr;
  uint64_t step_ = 0;     // this runner's step count (orders the update team's steps)
  uint64_t step_id_ = 0;  // unique in the process
  bool begun_ = false;
  std::unordered_map<const void*, uint64_t> calls_;
  std::vector<std::pair<autograd::Variable, Tensor>> assigns_;
};

ReplicaRunner::ReplicaRunner(std::shared_ptr<ReplicaPool> pool, std::shared_ptr<cluster::WorkerGroup> workers)
    : pool_(std::move(pool)),
      workers_(std::move(workers)),
      reducer_(pool_->size(), gradient_bucket_bytes_from_env()),
      team_(pool_->size()) {
  const int replicas = pool_->size() * num_workers();
  for (int r = 0; r < pool_->size(); ++r) contexts_.push_back(std::make_unique<Context>(r, replicas, reducer_, team_, contexts_));
}

int ReplicaRunner::num_workers() const { return workers_ ? workers_->size() : 1; }

std::vector<int> ReplicaRunner::slice_workers() const {
  std::vector<int> out;
  for (int w = 0; w < num_workers(); ++w) out.insert(out.end(), static_cast<size_t>(num_replicas()), w);
  return out;
}

ReplicaRunner::~ReplicaRunner() = default;

std::vector<std::pair<int64_t, int64_t>> ReplicaRunner::split(int64_t rows, int replicas) {
  std::vector<std::pair<int64_t, int64_t>> slices;
  const int64_t base = rows / replicas, extra = rows % replicas;
  int64_t begin = 0;
  for (int r = 0; r < replicas; ++r) {
    const int64_t end = begin + base + (r < extra ? 1 : 0);
    slices.emplace_back(begin, end);
    begin = end;
  }
  return slices;
}

int ReplicaRunner::run(int64_t global_rows, std::optional<int64_t> own_rows, bool training,
                       const Step& step) {
  std::vector<std::pair<int64_t, int64_t>> slices;
  if (own_rows) {
    slices = split(*own_rows, pool_->size());
  } else {
    const int first = workers_ ? workers_->rank() * pool_->size() : 0;  // this worker's first global replica
    const auto all = split(global_rows, pool_->size() * num_workers());
    slices.assign(all.begin() + first, all.begin() + first + pool_->size());
  }
  int active = 0;
  while (active < pool_->size() && slices[static_cast<size_t>(active)].second > slices[static_cast<size_t>(active)].first) {
    ++active;
  }
  if (active == 0) active = 1;  // replica 0 runs without rows: an empty batch, or no rows for this worker
  const uint64_t step_index = steps_++;
  // Unique in the process (runners are made per compile), for ReplicaContext::step().
  static std::atomic<uint64_t> next_step_id{0};
  const uint64_t step_id = next_step_id.fetch_add(1);
  pool_->run(active, [&](int replica) {
    Context& context = *contexts_[static_cast<size_t>(replica)];
    const auto [begin, end] = slices[static_cast<size_t>(replica)];
    context.begin_step(step_index, step_id, begin, end, global_rows, &pool_->communicator(replica),
                       workers_ ? &workers_->communicator() : nullptr);
    if (replica != 0) {
      step(context, begin, end);
      return;
    }
    // However replica 0's step ends, helpers still serving its update are released.
    struct CloseTeam {
      UpdateTeam& team;
      uint64_t step;
      ~CloseTeam() { team.close(step); }
    } close{team_, step_index + 1};
    step(context, begin, end);
  });
  apply_assigns(active, global_rows, training);
  return active;
}

// Deferred assigns: the replicas' values weighted by their rows, added in replica order,
// then across workers. A worker without rows adds zeros to the assigns of its last
// training step, so every worker issues the same all-reduces.
void ReplicaRunner::apply_assigns(int active, int64_t global_rows, bool training) {
  autograd::NoGradGuard no_grad;
  std::vector<std::pair<autograd::Variable, Tensor>> means;
  const bool has_rows = contexts_[0]->local_rows() > 0;
  if (has_rows || global_rows == 0) {
    const auto& first = contexts_[0]->assigns();
    for (size_t k = 0; k < first.size(); ++k) {
      Tensor sum;
      for (int r = 0; r < active; ++r) {
        const Context& context = *contexts_[static_cast<size_t>(r)];
        if (k >= context.assigns().size()) continue;
        const double weight =
            global_rows > 0 ? static_cast<double>(context.local_rows()) / static_cast<double>(global_rows) : 1.0;
        Tensor term = context.assigns()[k].second * weight;
        sum = sum.defined() ? sum + term : term;
      }
      means.emplace_back(first[k].first, sum);
    }
    if (training) {
      assigned_.clear();
      for (const auto& [variable, value] : means) assigned_.push_back(variable);
    }
  } else if (training && workers_) {
    for (const autograd::Variable& variable : assigned_) {
      means.emplace_back(variable, zeros(variable.shape(), variable.dtype()));
    }
  }
  if (workers_ && workers_->size() > 1) {
    std::vector<std::unique_ptr<comm::Work>> pending;
    for (auto& [variable, sum] : means) pending.push_back(workers_->communicator().all_reduce_async(sum));
    for (auto& work : pending) work->wait();
  }
  for (const auto& [variable, value] : means) variable.assign(value);
}

}  // namespace chorus::replicas
