// Keras 3's distribution API (keras.distribution): DeviceMesh, TensorLayout, the
// Distribution base with DataParallel, and the process-wide current distribution that
// models capture when they are compiled. Distribution objects are immutable once built
// and safe to share between threads; set_distribution/scope are meant for the main thread.
//
//   ch::distribution::set_distribution(ch::distribution::DataParallel(ch::devices()));
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/core/device.h"
#include "chorus/core/shape.h"

namespace chorus::replicas {
class ReplicaPool;
}  // namespace chorus::replicas
namespace chorus::cluster {
class WorkerGroup;
}  // namespace chorus::cluster

namespace chorus::distribution {

// Devices arranged in an N-D grid with named axes (keras.distribution.DeviceMesh). In a
// multi-worker job a mesh holds either this worker's devices (every worker gives the same
// mesh of its own) or every device of the job (list_devices()): then it spans the workers.
class DeviceMesh {
 public:
  // Throws ValueError unless shape's product equals the number of devices and there is
  // one distinct axis name per dimension; IndexError for a device that does not exist
  // (in the job, after initialize()).
  DeviceMesh(std::vector<int64_t> shape, std::vector<std::string> axis_names, std::vector<Device> devices);

  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<std::string>& axis_names() const { return axis_names_; }
  const std::vector<Device>& devices() const { return devices_; }

 private:
  std::vector<int64_t> shape_;
  std::vector<std::string> axis_names_;
  std::vector<Device> devices_;
};

// How a tensor is laid out over a mesh: per tensor dimension, the mesh axis it is split
// along, or nullopt where it is replicated (keras.distribution.TensorLayout).
class TensorLayout {
 public:
  TensorLayout() = default;  // no axes: a scalar's layout
  explicit TensorLayout(std::vector<std::optional<std::string>> axes, std::optional<DeviceMesh> device_mesh = {});
  // layout_map["d1/kernel"] = {std::nullopt, "model"}: Keras's tuple (None, "model").
  TensorLayout(std::initializer_list<std::optional<std::string>> axes)  // NOLINT: implicit, as Keras's tuples
      : TensorLayout(std::vector<std::optional<std::string>>(axes)) {}

  const std::vector<std::optional<std::string>>& axes() const { return axes_; }
  const std::optional<DeviceMesh>& device_mesh() const { return device_mesh_; }

 private:
  std::vector<std::optional<std::string>> axes_;
  std::optional<DeviceMesh> device_mesh_;
};

class DistributionScope;

// The base of distributions: the mesh, the layouts of data and variables, and the replica
// threads steps run on (made on first use, shared by copies).
class Distribution {
 public:
  virtual ~Distribution();

  const DeviceMesh& device_mesh() const { return device_mesh_; }
  // The layout of a batch of `data_shape` and of a variable.
  virtual TensorLayout get_data_layout(const Shape& data_shape) const = 0;
  virtual TensorLayout get_variable_layout(const autograd::Variable& variable) const = 0;
  // How many replicas run each step, over all workers.
  virtual int num_replicas() const = 0;

  // The multi-worker job this distribution spans (distribution::initialize() before it
  // was made), or nullptr for this process alone. Every worker contributes as many
  // devices: the mesh holds either this worker's devices or all of the job's.
  const std::shared_ptr<cluster::WorkerGroup>& workers() const { return workers_; }
  int num_workers() const;
  // Whether the mesh holds the devices of every worker (list_devices() after initialize())
  // rather than each worker's own.
  bool mesh_spans_workers() const { return spans_workers_; }
  // The devices of the mesh this process runs, in mesh order, as its local devices.
  std::vector<Device> local_devices() const;

  // Makes this the current distribution until the scope ends (Keras's `with
  // distribution.scope():`).
  DistributionScope scope() const;

  // The replica threads, one per local device of the mesh, shared by this distribution's
  // clones: made by `make` on the first call. The step runtime (replicas/) owns their
  // type, so this API layer only keeps them (replicas::replica_pool_of calls this).
  std::shared_ptr<replicas::ReplicaPool> replica_pool(
      const std::function<std::shared_ptr<replicas::ReplicaPool>()>& make) const;

  virtual std::shared_ptr<Distribution> clone() const = 0;

 protected:
  explicit Distribution(DeviceMesh device_mesh);
  Distribution(const Distribution&) = default;

 private:
  struct Runtime;
  DeviceMesh device_mesh_;
  std::shared_ptr<cluster::WorkerGroup> workers_;
  bool spans_workers_ = false;
  std::shared_ptr<Runtime> runtime_;
};

// What data parallelism splits over the batch axis besides the batch, as ZeRO's stages and
// PyTorch FSDP's sharding strategies do: nothing (each device holds all the training
// state); the optimizer state (ZeRO-1: each device updates its rows of every variable,
// then the rows are gathered); that and the gradients (ZeRO-2: reduced by a
// reduce-scatter, each device keeping its rows' sum); or the parameters too (ZeRO-3,
// fully sharded data parallelism: each device stores its rows, and a step gathers a
// variable whole when it reads it). Only trainable floating variables whose first
// dimension divides over the batch axis are split; the others stay whole.
enum class Shard : uint8_t { kNone, kOptimizerState, kGradients, kFull };

// Whether Shard::kFull splits `variable` over a batch axis of `positions` devices by rows.
bool splits_fully(const autograd::Variable& variable, int64_t positions);

struct DataParallelOptions {
  Shard shard = Shard::kNone;
};

// Synchronous data parallelism: variables mirrored on every device (on a CPU host the
// mirrors share one buffer), each batch split along its first axis over a 1-D mesh — and
// over every worker of the job after distribution::initialize() (Keras's multi-process
// DataParallel): each worker takes its contiguous rows of every global batch. The mesh
// holds this worker's devices, or the job's (list_devices()) in worker order.
class DataParallel : public Distribution {
 public:
  // All local devices when `devices` is empty. Throws ValueError for a device listed
  // twice, IndexError for one that does not exist.
  explicit DataParallel(std::vector<Device> devices = {}, DataParallelOptions options = {});
  // A 1-D mesh (its only axis is the batch axis). Throws ValueError for a mesh of another rank.
  explicit DataParallel(DeviceMesh device_mesh, DataParallelOptions options = {});

  const std::string& batch_dim_name() const { return device_mesh().axis_names()[0]; }
  // With a Shard other than kNone, steps run as a ModelParallel of the same mesh with no
  // layouts and that Shard (distribution::mesh_form).
  const DataParallelOptions& options() const { return options_; }

  TensorLayout get_data_layout(const Shape& data_shape) const override;
  TensorLayout get_variable_layout(const autograd::Variable& variable) const override;
  int num_replicas() const override;
  std::shared_ptr<Distribution> clone() const override { return std::make_shared<DataParallel>(*this); }

 private:
  void check_worker_order() const;

  DataParallelOptions options_;
};

// Every device of the job (keras.distribution.list_devices, as JAX numbers them): after
// initialize(), worker w's local device i is cpu:(w * n + i) where each worker has n;
// before, this process's devices. A DeviceMesh over them spans the workers.
std::vector<Device> list_devices(std::string_view device_type = "");

// The current distribution (nullptr: one device), read by Model::compile.
std::shared_ptr<Distribution> distribution();
// Sets the current distribution for the process; nullptr goes back to one device.
void set_distribution(std::shared_ptr<Distribution> distribution);
void set_distribution(const Distribution& distribution);

// Restores the previous distribution when it ends. Movable, not copyable.
class [[nodiscard]] DistributionScope {
 public:
  explicit DistributionScope(std::shared_ptr<Distribution> distribution);
  ~DistributionScope();
  DistributionScope(DistributionScope&& other) noexcept;
  DistributionScope(const DistributionScope&) = delete;
  DistributionScope& operator=(const DistributionScope&) = delete;
  DistributionScope& operator=(DistributionScope&&) = delete;

 private:
  std::shared_ptr<Distribution> previous_;
  bool active_ = true;
};

}  // namespace chorus::distribution
