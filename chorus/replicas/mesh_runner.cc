#include "chorus/replicas/mesh_runner.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "chorus/autograd/tape.h"
#include "chorus/cluster/worker_group.h"
#include "chorus/comm/local_communicator.h"
#include "chorus/core/creation.h"
#include "chorus/core/sharding.h"
#include "chorus/ops/operators.h"
#include "chorus/ops/shape_ops.h"
#include "chorus/ops/sharded_ops.h"
#include "chorus/replicas/gathered_variables.h"
#include "chorus/replicas/replica_runner.h"
#include "chorus/step/replica_context.h"

namespace chorus::replicas {
namespace {

// Runs each task on a thread of its own, waits for all, then rethrows the first error.
void run_at_once(const std::vector<std::function<void()>>& tasks) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        tasks[i]();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace

// One device's view of the current step: its replica context (batch slice, gradients,
// update) and its place in the mesh (collectives along each axis).
class MeshRunner::Context final : public step::ReplicaContext, public MeshContext {
 public:
  Context(MeshRunner& runner, int device, int devices)
      : step::ReplicaContext(device, devices),
        runner_(runner),
        device_(device),
        gathered_(device, [this](int axis) -> comm::Communicator& { return communicator(axis); }) {}

  void begin_step(uint64_t step_id, int64_t begin, int64_t end, int64_t rows) {
    set_slice(begin, end - begin, rows);
    streamed_.clear();
    step_id_ = step_id;
    calls_.clear();
  }

  // ReplicaContext
  uint64_t call_in_step(const void* owner) override { return calls_[owner]++; }
  uint64_t step() const override { return step_id_; }

  // Gradients are reduced when the update begins; tables take dense gradients, which are
  // blocks where the table is sharded. A variable split over the batch axis is the
  // exception: as soon as its gradient is final (the records that read its whole value
  // have run; Model::train_step, the one caller, keeps no persistent tape), the whole
  // value is freed, and the gradient reduce-scattered to this device's rows, which are
  // all that stays (the tape lets go of the whole gradient).
  autograd::GradientStreaming stream_gradients(std::span<const autograd::Variable> variables) override {
    std::vector<const void*> ids;
    std::vector<bool> streamed;
    for (const autograd::Variable& v : variables) {
      ids.push_back(v.id());
      const Sharding* layout = v.device_values()[static_cast<size_t>(device_)].impl()->sharding.get();
      streamed.push_back(scatters() && layout != nullptr && gathers_on_read(*layout));
    }
    return {.ready =
                [this, ids, streamed](size_t i, const Tensor& grad) {
                  gathered_.free(ids[i]);
                  if (streamed[i] && grad.defined()) {
                    streamed_[ids[i]] = own_rows_of_sum(weighted(grad), runner_.distribution_->batch_axis());
                  }
                },
            .takes_slices = [](size_t) { return false; },
            .takes_ownership = [streamed](size_t i) { return static_cast<bool>(streamed[i]); }};
  }

  // Each gradient weighted by this device's share of the batch and summed over the batch
  // axis (and the workers): whole, or only this device's rows where a reduce-scatter can
  // (a variable split over the batch axis; ZeRO-2's). Then each device updates its own
  // blocks, and ZeRO's rows are gathered.
  void apply_gradients(std::span<const Tensor> grads, std::span<const autograd::IndexedSlices> sparse,
                       std::span<const autograd::Variable> variables, const Update& update) override {
    LocalShardScope local;
    std::vector<Tensor> reduced(grads.size());
    std::vector<bool> by_rows(grads.size());  // whether reduced[i] is this device's rows already
    const int batch = runner_.distribution_->batch_axis();
    const bool scatter = scatters();
    for (size_t i = 0; i < grads.size(); ++i) {
      if (const auto it = streamed_.find(variables[i].id()); it != streamed_.end()) {
        reduced[i] = it->second;
        by_rows[i] = true;
        continue;
      }
      Tensor grad = grads[i];
      if (!grad.defined() && i < sparse.size() && sparse[i].defined()) grad = sparse[i].to_dense();
      if (!grad.defined()) continue;
      const Tensor& value = variables[i].value();
      const Sharding* layout = value.impl()->sharding.get();
      const bool gathered = layout != nullptr && gathers_on_read(*layout);
      if (gathered) gathered_.free(variables[i].id());
      if (layout != nullptr && !gathered && grad.impl()->sharding == nullptr && grad.shape() != value.shape()) {
        grad = ops::sharded::shard(grad, layout->axis, layout->dim);  // a whole gradient (a step without rows)
      }
      if (runner_.batch_positions() > 1) {  // the same test on every device, rows or not
        grad = weighted(grad);
        by_rows[i] = scatter && (gathered || (runner_.updated_by_rows_.count(variables[i].path()) != 0 &&
                                              runner_.distribution_->options().shard != distribution::Shard::kOptimizerState));
        if (by_rows[i]) {
          grad = own_rows_of_sum(grad, batch);
        } else {
          all_reduce(grad, batch);
        }
      }
      reduced[i] = grad;
    }
    if (runner_.batch_continues_across_workers()) runner_.reduce_across_workers(device_, reduced);
    for (size_t i = 0; i < variables.size(); ++i) {
      const Sharding* layout = variables[i].value().impl()->sharding.get();
      if (reduced[i].defined() && !by_rows[i] && layout != nullptr && gathers_on_read(*layout)) {
        reduced[i] = own_rows(reduced[i], batch);
        by_rows[i] = true;
      }
    }
    streamed_.clear();
    update_by_rows(reduced, by_rows, variables, update);
  }

  // ZeRO: this device's rows of the variables whose state is split over the batch axis,
  // then the others' rows gathered.
  void update_by_rows(std::vector<Tensor>& reduced, const std::vector<bool>& by_rows,
                      std::span<const autograd::Variable> variables, const Update& update) {
    const int batch = runner_.distribution_->batch_axis();
    std::vector<std::pair<size_t, Tensor>> whole_values;
    for (size_t i = 0; i < variables.size(); ++i) {
      if (!reduced[i].defined() || runner_.updated_by_rows_.count(variables[i].path()) == 0) continue;
      const Tensor whole = variables[i].value();
      const Sharding rows_layout{batch, 0, whole.shape()};
      variables[i].exchange_device_value(static_cast<size_t>(device_), sharded_tensor(own_rows(whole, batch), rows_layout));
      if (!by_rows[i]) reduced[i] = own_rows(reduced[i], batch);
      whole_values.emplace_back(i, whole);
    }
    update(reduced, {}, variables);
    for (const auto& [i, whole] : whole_values) {
      const Tensor rows = shard_block(variables[i].value()).clone();
      variables[i].exchange_device_value(static_cast<size_t>(device_), whole);
      all_gather(rows, whole.view({whole.numel()}), batch);
    }
  }

  // BatchNormalization's moving statistics: the rows-weighted mean over the batch axis, on
  // every worker.
  void assign_mean(const autograd::Variable& variable, const Tensor& value) override {
    std::vector<Tensor> mean{weighted(value)};
    all_reduce(mean[0], runner_.distribution_->batch_axis());
    if (runner_.batch_continues_across_workers()) runner_.reduce_across_workers(device_, mean);
    variable.assign(mean[0]);
  }

  // Only data parallelism splits tables across workers (Model::sync_workers), so nothing
  // under ModelParallel asks for an exchange of its own.
  void run_once(const std::function<void()>& /*once*/) override {
    throw_error<ValueError>("ModelParallel: exchanges across workers from inside a step are not supported; "
                            "a DistributedEmbedding keeps its tables whole on each worker here");
  }
  comm::Communicator* workers() const override { return nullptr; }

  // MeshContext
  int device() const override { return device_; }
  int axis_size(int axis) const override {
    return static_cast<int>(runner_.distribution_->device_mesh().shape()[static_cast<size_t>(axis)]);
  }
  int axis_index(int axis) const override {
    return runner_.coordinates_[static_cast<size_t>(device_)][static_cast<size_t>(axis)];
  }
  const std::string& axis_name(int axis) const override {
    return runner_.distribution_->device_mesh().axis_names()[static_cast<size_t>(axis)];
  }
  void all_reduce(const Tensor& tensor, int axis) override {
    if (axis_size(axis) > 1) communicator(axis).all_reduce(tensor);
  }
  void all_gather(const Tensor& input, const Tensor& output, int axis) override {
    communicator(axis).all_gather(input, output);
  }
  void reduce_scatter(const Tensor& input, const Tensor& output, int axis) override {
    communicator(axis).reduce_scatter(input, output);
  }
  bool gathers_on_read(const Sharding& sharding) const override {
    return sharding.axis == runner_.distribution_->batch_axis();
  }
  const Tensor& gathered_value(const void* variable) override { return gathered_.value(variable); }

  // Starts gathering the variables split over the batch axis (GatheredVariables).
  void start_gathers() {
    gathered_.start(runner_.placed_, [this](const Sharding& s) { return gathers_on_read(s); });
  }
  void finish_gathers(bool failed) { gathered_.finish(failed); }
  Tensor lay_out_output(const std::string& layer_path, const Tensor& output) override {
    auto it = output_placements_.find(layer_path);
    if (it == output_placements_.end()) {
      it = output_placements_.emplace(layer_path, runner_.distribution_->output_placement(layer_path, output.shape()))
               .first;
    }
    if (!it->second) return output;
    const distribution::VariablePlacement& target = *it->second;
    if (is_sharded(output)) {
      const Sharding& s = *output.impl()->sharding;
      if (target.axis == s.axis && target.dim == s.dim) return output;
    }
    const Tensor whole = ops::sharded::replicate(output);
    return target.axis ? ops::sharded::shard(whole, *target.axis, target.dim) : whole;
  }

 private:
  comm::Communicator& communicator(int axis) const {
    return *runner_.comms_[static_cast<size_t>(axis)][static_cast<size_t>(device_)];
  }
  // This device's rows of `whole` split over `axis` by its first dimension (a view).
  Tensor own_rows(const Tensor& whole, int axis) const {
    const int64_t rows = whole.dim(0) / axis_size(axis), begin = rows * axis_index(axis);
    return whole.first_axis_slice(begin, begin + rows);
  }
  // own_rows() of the sum over `axis` of every device's `whole`.
  Tensor own_rows_of_sum(const Tensor& whole, int axis) {
    Shape shape = whole.shape();
    shape[0] /= axis_size(axis);
    Tensor rows = Tensor::empty(shape, whole.dtype());
    reduce_scatter(whole, rows, axis);
    return rows;
  }
  // Whether gradients reduced over the batch axis can be reduce-scattered (not when the
  // workers sum them afterwards).
  bool scatters() const { return runner_.batch_positions() > 1 && !runner_.batch_continues_across_workers(); }
  // `value` weighted by this device's share of the batch; zeros for a device without rows,
  // whatever it computed on the row it stood in with (MeshRunner::shards_over_batch_axis).
  Tensor weighted(const Tensor& value) const {
    const float share = scale();
    return share == 0 ? zeros(value.shape(), value.dtype()) : value * share;
  }
  float scale() const {
    return global_rows() > 0 ? static_cast<float>(static_cast<double>(local_rows()) / global_rows()) : 0.0F;
  }


  MeshRunner& runner_;
  int device_;
  GatheredVariables gathered_;  // this step's whole values of the variables split over the batch axis
  std::unordered_map<const void*, Tensor> streamed_;  // by Variable::id(): rows reduced in backward
  uint64_t step_id_ = 0;
  std::unordered_map<const void*, uint64_t> calls_;
  // Each layer's output placement by layer path, looked up once (nullopt: none asked).
  std::unordered_map<std::string, std::optional<distribution::VariablePlacement>> output_placements_;
};

MeshRunner::MeshRunner(std::shared_ptr<const distribution::ModelParallel> distribution)
    : distribution_(std::move(distribution)),
      workers_(distribution_->workers()),
      pool_(replica_pool_of(*distribution_)),
      spans_workers_(distribution_->mesh_spans_workers()) {
  const std::vector<int64_t>& shape = distribution_->device_mesh().shape();
  const std::vector<Device>& devices = distribution_->device_mesh().devices();
  batch_size_ = static_cast<int>(shape[static_cast<size_t>(distribution_->batch_axis())]);
  staged_.resize(static_cast<size_t>(pool_->size()));
  const int local = spans_workers_ ? static_cast<int>(devices.size()) / workers_->size() : pool_->size();
  for (size_t p = 0; p < devices.size(); ++p) {
    std::vector<int> coords(shape.size());
    auto rest = static_cast<int>(p);
    for (size_t a = shape.size(); a-- > 0;) {
      coords[a] = rest % static_cast<int>(shape[a]);
      rest /= static_cast<int>(shape[a]);
    }
    const int worker = spans_workers_ ? devices[p].index / local : (workers_ ? workers_->rank() : 0);
    // The pool runs this worker's devices in mesh order (Distribution::local_devices).
    if (!workers_ || worker == workers_->rank()) coordinates_.push_back(coords);
    positions_.push_back(std::move(coords));
    position_workers_.push_back(worker);
  }
  for (int d = 0; d < pool_->size(); ++d) contexts_.push_back(std::make_unique<Context>(*this, d, pool_->size()));
  make_communicators();
}

// The variables go back to one whole value each (a model compiled again places them anew);
// those split over several workers' devices cannot gather here (Model::compile does).
MeshRunner::~MeshRunner() {
  for (const autograd::Variable& v : placed_) {
    const std::vector<bool> held = v.held_blocks();
    if (std::all_of(held.begin(), held.end(), [](bool h) { return h; })) v.gather_device_values();
  }
}

// For each axis, one group per line of devices along it (the devices whose coordinates
// differ only there), ranked by their position on the axis: in-process communicators
// where the line's devices are all this worker's, else Gloo, each device connecting its
// own (at once: each waits for the whole line).
void MeshRunner::make_communicators() {
  static std::atomic<int> generation{0};  // the same on every worker: they make meshes alike
  const int made = generation.fetch_add(1);
  const std::vector<int64_t>& shape = distribution_->device_mesh().shape();
  comms_.clear();
  comms_.resize(shape.size());
  std::vector<std::function<void()>> connects;
  for (size_t a = 0; a < shape.size(); ++a) {
    comms_[a].resize(static_cast<size_t>(pool_->size()));
    std::map<std::vector<int>, std::vector<int>> lines;  // line key -> worker of each position along it
    for (size_t p = 0; p < positions_.size(); ++p) {
      std::vector<int> key = positions_[p];
      key[a] = 0;
      auto& line = lines[key];
      line.resize(static_cast<size_t>(shape[a]));
      line[static_cast<size_t>(positions_[p][a])] = position_workers_[p];
    }
    std::map<std::vector<int>, std::vector<std::unique_ptr<comm::Communicator>>> local_lines;
    for (int d = 0; d < pool_->size(); ++d) {
      const std::vector<int>& coords = coordinates_[static_cast<size_t>(d)];
      std::vector<int> key = coords;
      key[a] = 0;
      const std::vector<int>& workers = lines[key];
      const bool crosses = std::any_of(workers.begin(), workers.end(), [&](int w) { return w != workers[0]; });
      auto& slot = comms_[a][static_cast<size_t>(d)];
      if (!crosses) {
        auto& line = local_lines[key];
        if (line.empty()) line = comm::make_local_communicators(static_cast<int>(shape[a]));
        slot = std::move(line[static_cast<size_t>(coords[a])]);
        continue;
      }
      std::string name = fmt::format("mesh{}/axis{}/line", made, a);
      for (int c : key) name += fmt::format("_{}", c);
      connects.emplace_back([this, &slot, name, rank = coords[a], size = static_cast<int>(shape[a])] {
        slot = workers_->connect(name, rank, size);
      });
    }
  }
  run_at_once(connects);
  comms_broken_ = false;
}

std::vector<int> MeshRunner::slice_workers() const {
  std::vector<int> out;
  if (!spans_workers_) {
    for (int w = 0; w < (workers_ ? workers_->size() : 1); ++w) out.insert(out.end(), static_cast<size_t>(batch_size_), w);
    return out;
  }
  // Batch position b is reported by its device at position 0 of every other axis.
  const auto batch = static_cast<size_t>(distribution_->batch_axis());
  out.resize(static_cast<size_t>(batch_size_));
  for (size_t p = 0; p < positions_.size(); ++p) {
    const std::vector<int>& coords = positions_[p];
    bool first = true;
    for (size_t a = 0; a < coords.size(); ++a) first = first && (a == batch || coords[a] == 0);
    if (first) out[static_cast<size_t>(coords[batch])] = position_workers_[p];
  }
  return out;
}

bool MeshRunner::shards_over_batch_axis() const {
  const int batch = distribution_->batch_axis();
  return std::any_of(placed_.begin(), placed_.end(), [&](const autograd::Variable& v) {
    const Sharding* layout = v.device_values()[0].impl()->sharding.get();
    return v.trainable() && layout != nullptr && layout->axis == batch;
  });
}

int MeshRunner::batch_positions() const {
  return batch_continues_across_workers() ? batch_size_ * workers_->size() : batch_size_;
}

bool MeshRunner::batch_continues_across_workers() const {
  return !spans_workers_ && workers_ != nullptr && workers_->size() > 1;
}

bool MeshRunner::reports(int replica) const {
  const std::vector<int>& coords = coordinates_[static_cast<size_t>(replica)];
  for (size_t a = 0; a < coords.size(); ++a) {
    if (static_cast<int>(a) != distribution_->batch_axis() && coords[a] != 0) return false;
  }
  return true;
}

void MeshRunner::place(const autograd::Variable& variable, const distribution::VariablePlacement& placement) {
  if (variable.distributed()) {  // an optimizer slot made on its variable's blocks
    const Sharding* held = variable.device_values()[0].impl()->sharding.get();
    if (held != nullptr && placement.axis == held->axis && placement.dim == held->dim) {
      placed_.push_back(variable);
      return;
    }
    variable.gather_device_values();
  }
  const Tensor whole = variable.value();
  std::vector<Tensor> values;
  std::vector<int> blocks;
  for (int d = 0; d < pool_->size(); ++d) {
    if (!placement.axis) {
      values.push_back(whole.clone());
      continue;
    }
    const int axis = *placement.axis;
    const int count = static_cast<int>(distribution_->device_mesh().shape()[static_cast<size_t>(axis)]);
    const int block = coordinates_[static_cast<size_t>(d)][static_cast<size_t>(axis)];
    autograd::NoGradGuard no_grad;
    Tensor mine = ops::split(whole, count, placement.dim)[static_cast<size_t>(block)].clone();
    values.push_back(sharded_tensor(mine, Sharding{axis, placement.dim, whole.shape()}));
    blocks.push_back(block);
  }
  variable.set_device_values(std::move(values), std::move(blocks));
  placed_.push_back(variable);
}

void MeshRunner::reduce_across_workers(int device, std::vector<Tensor>& grads) {
  const int batch = distribution_->batch_axis();
  comm::Communicator& local = pool_->communicator(device);
  staged_[static_cast<size_t>(device)] = grads;
  local.barrier();
  if (device == 0) {  // one fused all-reduce per model group, in device order on every worker
    for (size_t d = 0; d < staged_.size(); ++d) {
      if (coordinates_[d][static_cast<size_t>(batch)] != 0) continue;
      std::vector<Tensor>& group = staged_[d];
      int64_t count = 0;
      for (const Tensor& g : group) count += g.defined() ? g.numel() : 0;
      Tensor fused = Tensor::empty({count}, kFloat32);
      float* at = fused.data<float>();
      for (const Tensor& g : group) {
        if (!g.defined()) continue;
        std::copy_n(g.data<float>(), g.numel(), at);
        at += g.numel();
      }
      workers_->communicator().all_reduce(fused);
      const float* from = fused.data<float>();
      for (Tensor& g : group) {
        if (!g.defined()) continue;
        Tensor sum = Tensor::empty(g.shape(), kFloat32);
        std::copy_n(from, g.numel(), sum.data<float>());
        from += g.numel();
        g = sum;
      }
    }
  }
  local.barrier();
  // The devices of a model group hold the same gradients: each reads its group's sums.
  std::vector<int> peer = coordinates_[static_cast<size_t>(device)];
  peer[static_cast<size_t>(batch)] = 0;
  for (size_t d = 0; d < staged_.size(); ++d) {
    if (coordinates_[d] == peer) grads = staged_[d];
  }
  local.barrier();  // every device has read before the next step stages again
}

int MeshRunner::run(int64_t global_rows, std::optional<int64_t> own_rows, bool /*training*/,
                    const Step& step) {
  if (own_rows) throw Error("ModelParallel: a batch of this worker's rows only (FILE sharding) is not supported");
  if (comms_broken_) make_communicators();
  const int batch = distribution_->batch_axis();
  // Every worker's batch-axis positions in turn: worker w's position b is w * batch_size_ + b.
  const int first = batch_continues_across_workers() ? workers_->rank() * batch_size_ : 0;
  const auto slices = ReplicaRunner::split(global_rows, batch_positions());
  static std::atomic<uint64_t> next_step_id{0};
  const uint64_t step_id = next_step_id.fetch_add(1);
  ++steps_;
  try {
    pool_->run(pool_->size(), [&](int device) {
      Context& context = *contexts_[static_cast<size_t>(device)];
      const auto [begin, end] =
          slices[static_cast<size_t>(first + coordinates_[static_cast<size_t>(device)][static_cast<size_t>(batch)])];
      context.begin_step(step_id, begin, end, global_rows);
      MeshContextScope mesh(&context);
      try {
        context.start_gathers();
        step(context, begin, end);
        context.finish_gathers(/*failed=*/false);
      } catch (...) {  // the other devices may be waiting in a collective along any axis
        for (auto& axis : comms_) {
          for (auto& comm : axis) comm->abort("device " + std::to_string(device) + " of the mesh failed");
        }
        context.finish_gathers(/*failed=*/true);
        throw;
      }
    });
  } catch (...) {
    comms_broken_ = true;
    for (const autograd::Variable& v : placed_) v.device_values_changed();
    throw;
  }
  for (const autograd::Variable& v : placed_) v.device_values_changed();
  return pool_->size();
}

}  // namespace chorus::replicas
