#include "chorus/distribution/distribution.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "chorus/cluster/worker_group.h"
#include "chorus/core/devices.h"
#include "chorus/core/error.h"
#include "chorus/distribution/initialize.h"

namespace chorus::distribution {
namespace {

std::mutex g_distribution_mutex;
std::shared_ptr<Distribution> g_distribution;

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

// Throws IndexError unless `device` is one of list_devices().
void check_job_device(const Device& device) {
  const auto group = worker_group();
  const auto local = static_cast<int>(chorus::list_devices().size());
  if (group == nullptr || !device.is_cpu() || device.index < local) {
    chorus::check_device(device);
    return;
  }
  const int job = local * group->size();
  if (device.index >= job) {
    throw_error<IndexError>("{} does not exist: the job has {} logical CPU devices ({} workers of {}; cpu:0..cpu:{})",
                            device.to_string(), job, group->size(), local, job - 1);
  }
}

}  // namespace

std::vector<Device> list_devices(std::string_view device_type) {
  std::vector<Device> devices = chorus::list_devices(device_type);
  const auto group = worker_group();
  if (group == nullptr) return devices;
  const auto local = static_cast<int>(devices.size());
  for (int i = local; i < local * group->size(); ++i) devices.push_back(Device::cpu(i));
  return devices;
}

DeviceMesh::DeviceMesh(std::vector<int64_t> shape, std::vector<std::string> axis_names, std::vector<Device> devices)
    : shape_(std::move(shape)), axis_names_(std::move(axis_names)), devices_(std::move(devices)) {
  if (shape_.size() != axis_names_.size()) {
    throw_error<ValueError>("DeviceMesh: shape {} has {} dimensions but {} axis names were given", dims_string(shape_),
                            shape_.size(), axis_names_.size());
  }
  int64_t count = 1;
  for (int64_t d : shape_) {
    if (d <= 0) throw_error<ValueError>("DeviceMesh: expected positive dimensions, got shape {}", dims_string(shape_));
    count *= d;
  }
  if (count != static_cast<int64_t>(devices_.size())) {
    throw_error<ValueError>("DeviceMesh: shape {} needs {} devices, got {}", dims_string(shape_), count,
                            devices_.size());
  }
  if (std::set<std::string>(axis_names_.begin(), axis_names_.end()).size() != axis_names_.size()) {
    throw ValueError("DeviceMesh: axis names must be distinct");
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    check_job_device(devices_[i]);
    for (size_t j = 0; j < i; ++j) {
      if (devices_[i] == devices_[j]) {
        throw_error<ValueError>("DeviceMesh: device {} is listed twice", devices_[i].to_string());
      }
    }
  }
}

TensorLayout::TensorLayout(std::vector<std::optional<std::string>> axes, std::optional<DeviceMesh> device_mesh)
    : axes_(std::move(axes)), device_mesh_(std::move(device_mesh)) {
  if (!device_mesh_) return;
  const auto& names = device_mesh_->axis_names();
  for (const auto& axis : axes_) {
    if (axis && std::find(names.begin(), names.end(), *axis) == names.end()) {
      throw_error<ValueError>("TensorLayout: axis \"{}\" is not an axis of the device mesh", *axis);
    }
  }
}

struct Distribution::Runtime {
  std::mutex mutex;
  std::shared_ptr<replicas::ReplicaPool> pool;
};

Distribution::Distribution(DeviceMesh device_mesh)
    : device_mesh_(std::move(device_mesh)), workers_(worker_group()), runtime_(std::make_shared<Runtime>()) {
  if (workers_ == nullptr) return;
  const auto local = static_cast<int64_t>(chorus::list_devices().size());
  const auto held = static_cast<int64_t>(device_mesh_.devices().size());
  spans_workers_ = held > local;
  if (spans_workers_ && held != local * workers_->size()) {
    throw_error<ValueError>("DeviceMesh: a mesh over several workers' devices holds every device of the job, {} "
                            "({} workers of {}), got {}",
                            local * workers_->size(), workers_->size(), local, held);
  }
  for (const Device& device : device_mesh_.devices()) {
    if (!spans_workers_ && device.index >= local) {
      throw_error<ValueError>("DeviceMesh: {} is another worker's device (each worker has cpu:0..cpu:{}); a mesh "
                              "over several workers' devices holds all {} of them",
                              device.to_string(), local - 1, local * workers_->size());
    }
  }
}

std::vector<Device> Distribution::local_devices() const {
  if (!spans_workers_) return device_mesh_.devices();
  const auto local = static_cast<int>(chorus::list_devices().size());
  const int first = workers_->rank() * local;
  std::vector<Device> out;
  for (const Device& device : device_mesh_.devices()) {
    if (device.index >= first && device.index < first + local) out.push_back(Device::cpu(device.index - first));
  }
  return out;
}

int Distribution::num_workers() const { return workers_ ? workers_->size() : 1; }

Distribution::~Distribution() = default;

std::shared_ptr<replicas::ReplicaPool> Distribution::replica_pool(
    const std::function<std::shared_ptr<replicas::ReplicaPool>()>& make) const {
  std::lock_guard lock(runtime_->mutex);
  if (!runtime_->pool) runtime_->pool = make();
  return runtime_->pool;
}

DistributionScope Distribution::scope() const { return DistributionScope(clone()); }

namespace {
DeviceMesh data_mesh(std::vector<Device> devices) {
  if (devices.empty()) devices = chorus::list_devices();
  const auto n = static_cast<int64_t>(devices.size());
  return DeviceMesh({n}, {"batch"}, std::move(devices));
}
}  // namespace

bool splits_fully(const autograd::Variable& variable, int64_t positions) {
  const Shape& shape = variable.shape();
  return positions > 1 && variable.trainable() && is_floating(variable.stored_dtype()) && shape.rank() > 0 &&
         shape[0] % positions == 0;
}

DataParallel::DataParallel(std::vector<Device> devices, DataParallelOptions options)
    : Distribution(data_mesh(std::move(devices))), options_(options) {
  check_worker_order();
}

DataParallel::DataParallel(DeviceMesh device_mesh, DataParallelOptions options)
    : Distribution(std::move(device_mesh)), options_(options) {
  if (this->device_mesh().shape().size() != 1) {
    throw_error<ValueError>("DataParallel: expected a 1-D device mesh, got one with {} dimensions",
                            this->device_mesh().shape().size());
  }
  check_worker_order();
}

// Each worker takes its contiguous rows of every batch (DataParallel across workers), so
// over the job's devices, worker w's come w-th.
void DataParallel::check_worker_order() const {
  if (!mesh_spans_workers()) return;
  const auto local = static_cast<int>(chorus::list_devices().size());
  const std::vector<Device>& devices = device_mesh().devices();
  for (size_t p = 0; p < devices.size(); ++p) {
    if (devices[p].index / local != static_cast<int>(p) / local) {
      throw_error<ValueError>("DataParallel: the devices of several workers go in worker order (list_devices()); "
                              "position {} holds {}, a device of worker {}",
                              p, devices[p].to_string(), devices[p].index / local);
    }
  }
}

int DataParallel::num_replicas() const {
  const auto devices = static_cast<int>(device_mesh().devices().size());
  return mesh_spans_workers() ? devices : devices * num_workers();
}

TensorLayout DataParallel::get_data_layout(const Shape& data_shape) const {
  std::vector<std::optional<std::string>> axes(static_cast<size_t>(std::max(data_shape.rank(), 1)));
  axes[0] = batch_dim_name();
  return TensorLayout(std::move(axes), device_mesh());
}

TensorLayout DataParallel::get_variable_layout(const autograd::Variable& variable) const {
  std::vector<std::optional<std::string>> axes(static_cast<size_t>(variable.shape().rank()));
  if (options_.shard == Shard::kFull && splits_fully(variable, device_mesh().shape()[0])) axes[0] = batch_dim_name();
  return TensorLayout(std::move(axes), device_mesh());
}

std::shared_ptr<Distribution> distribution() {
  std::lock_guard lock(g_distribution_mutex);
  return g_distribution;
}

void set_distribution(std::shared_ptr<Distribution> distribution) {
  std::lock_guard lock(g_distribution_mutex);
  g_distribution = std::move(distribution);
}

void set_distribution(const Distribution& distribution) { set_distribution(distribution.clone()); }

DistributionScope::DistributionScope(std::shared_ptr<Distribution> distribution)
    : previous_(chorus::distribution::distribution()) {
  set_distribution(std::move(distribution));
}

DistributionScope::DistributionScope(DistributionScope&& other) noexcept
    : previous_(std::move(other.previous_)), active_(other.active_) {
  other.active_ = false;
}

DistributionScope::~DistributionScope() {
  if (active_) set_distribution(std::move(previous_));
}

}  // namespace chorus::distribution
