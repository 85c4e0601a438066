#include "chorus/distribute/distribution.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "chorus/core/error.h"
#include "chorus/distribute/devices.h"
#include "chorus/distribute/replica_pool.h"
#include "chorus/distribute/worker_group.h"

namespace chorus::distribution {
namespace {

std::mutex g_distribution_mutex;
std::shared_ptr<Distribution> g_distribution;

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

}  // namespace

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
    distribute::check_device(devices_[i]);
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
  std::shared_ptr<distribute::ReplicaPool> pool;
};

Distribution::Distribution(DeviceMesh device_mesh)
    : device_mesh_(std::move(device_mesh)), workers_(worker_group()), runtime_(std::make_shared<Runtime>()) {}

int Distribution::num_workers() const { return workers_ ? workers_->size() : 1; }

Distribution::~Distribution() = default;

std::shared_ptr<distribute::ReplicaPool> Distribution::replica_pool() const {
  std::lock_guard lock(runtime_->mutex);
  if (!runtime_->pool) runtime_->pool = std::make_shared<distribute::ReplicaPool>(device_mesh_.devices());
  return runtime_->pool;
}

DistributionScope Distribution::scope() const { return DistributionScope(clone()); }

namespace {
DeviceMesh data_mesh(std::vector<Device> devices) {
  if (devices.empty()) devices = distribute::list_devices();
  const auto n = static_cast<int64_t>(devices.size());
  return DeviceMesh({n}, {"batch"}, std::move(devices));
}
}  // namespace

DataParallel::DataParallel(std::vector<Device> devices) : Distribution(data_mesh(std::move(devices))) {}

DataParallel::DataParallel(DeviceMesh device_mesh) : Distribution(std::move(device_mesh)) {
  if (this->device_mesh().shape().size() != 1) {
    throw_error<ValueError>("DataParallel: expected a 1-D device mesh, got one with {} dimensions",
                            this->device_mesh().shape().size());
  }
}

TensorLayout DataParallel::get_data_layout(const Shape& data_shape) const {
  std::vector<std::optional<std::string>> axes(static_cast<size_t>(std::max(data_shape.rank(), 1)));
  axes[0] = batch_dim_name();
  return TensorLayout(std::move(axes), device_mesh());
}

TensorLayout DataParallel::get_variable_layout(const autograd::Variable& variable) const {
  return TensorLayout(std::vector<std::optional<std::string>>(static_cast<size_t>(variable.shape().rank())),
                      device_mesh());
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
