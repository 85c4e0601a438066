// keras.distribution on chorus's: devices, DeviceMesh, DataParallel and the process's
// current distribution, which Model.compile captures as in C++.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chorus/core/devices.h"
#include "chorus/distribute/multi_worker_mirrored_strategy.h"
#include "chorus/distribution/distribution.h"
#include "chorus/distribution/initialize.h"
#include "chorus/distribution/layout_map.h"
#include "chorus/distribution/model_parallel.h"
#include "python/src/bindings.h"

namespace chorus::python {

using namespace pybind11::literals;

void bind_distribution(py::module_& m) {
  py::class_<Device>(m, "Device")
      .def_property_readonly("id", [](const Device& d) { return d.index; })
      .def_property_readonly("platform", [](const Device& d) { return d.is_cpu() ? "cpu" : "cuda"; })
      .def("__eq__", [](const Device& a, const Device& b) { return a == b; })
      .def("__hash__", [](const Device& d) { return std::hash<std::string>()(d.to_string()); })
      .def("__repr__", &Device::to_string);
  // tf.config.set_logical_device_configuration's split of the CPU into logical devices.
  m.def("set_cpu_devices", &set_cpu_devices, "count"_a);
  m.def("list_devices", [](const std::string& device_type) { return distribution::list_devices(device_type); },
        "device_type"_a = "");
  py::class_<distribution::DeviceMesh>(m, "DeviceMesh")
      .def(py::init<std::vector<int64_t>, std::vector<std::string>, std::vector<Device>>(), "shape"_a,
           "axis_names"_a, "devices"_a)
      .def_property_readonly("shape", &distribution::DeviceMesh::shape)
      .def_property_readonly("axis_names", &distribution::DeviceMesh::axis_names)
      .def_property_readonly("devices", &distribution::DeviceMesh::devices);
  py::class_<distribution::Distribution, std::shared_ptr<distribution::Distribution>>(m, "Distribution")
      .def_property_readonly("device_mesh", &distribution::Distribution::device_mesh);
  py::class_<distribution::DataParallel, distribution::Distribution, std::shared_ptr<distribution::DataParallel>>(
      m, "DataParallel")
      .def(py::init([](const std::optional<std::vector<Device>>& devices,
                       const std::optional<distribution::DeviceMesh>& device_mesh) {
             if (devices && device_mesh) throw py::value_error("DataParallel: pass devices or device_mesh, not both");
             if (device_mesh) return std::make_shared<distribution::DataParallel>(*device_mesh);
             return std::make_shared<distribution::DataParallel>(devices.value_or(std::vector<Device>{}));
           }),
           "devices"_a = py::none(), "device_mesh"_a = py::none())
      .def_property_readonly("batch_dim_name", &distribution::DataParallel::batch_dim_name);
  // A layout as Keras writes it: a tuple of mesh axis names and None, e.g. (None, "model").
  py::class_<distribution::TensorLayout>(m, "TensorLayout")
      .def(py::init([](const std::vector<std::optional<std::string>>& axes,
                       const std::optional<distribution::DeviceMesh>& device_mesh) {
             return distribution::TensorLayout(axes, device_mesh);
           }),
           "axes"_a, "device_mesh"_a = py::none())
      .def_property_readonly("axes", &distribution::TensorLayout::axes);
  py::class_<distribution::LayoutMap>(m, "LayoutMap")
      .def(py::init<distribution::DeviceMesh>(), "device_mesh"_a)
      .def("__setitem__", [](distribution::LayoutMap& map, const std::string& key, const py::object& layout) {
        map[key] = py::isinstance<distribution::TensorLayout>(layout)
                       ? layout.cast<distribution::TensorLayout>()
                       : distribution::TensorLayout(layout.cast<std::vector<std::optional<std::string>>>());
      }, "key"_a, "layout"_a)
      .def("__getitem__", [](const distribution::LayoutMap& map, const std::string& path) -> py::object {
        std::optional<distribution::TensorLayout> layout = map.get(path);
        if (!layout) return py::none();
        return py::tuple(py::cast(layout->axes()));
      }, "key"_a)
      .def("__len__", [](const distribution::LayoutMap& map) { return map.entries().size(); })
      .def_property_readonly("device_mesh", &distribution::LayoutMap::device_mesh);
  py::class_<distribution::ModelParallel, distribution::Distribution, std::shared_ptr<distribution::ModelParallel>>(
      m, "ModelParallel")
      .def(py::init([](const distribution::LayoutMap& layout_map, const std::string& batch_dim_name,
                       bool auto_shard_dataset, bool ignore_unmatched_layout_keys) {
             distribution::ModelParallelOptions options;
             options.batch_dim_name = batch_dim_name;
             options.auto_shard_dataset = auto_shard_dataset;
             options.ignore_unmatched_layout_keys = ignore_unmatched_layout_keys;
             return std::make_shared<distribution::ModelParallel>(layout_map, options);
           }),
           "layout_map"_a, "batch_dim_name"_a = "", "auto_shard_dataset"_a = true,
           "ignore_unmatched_layout_keys"_a = false)
      .def_property_readonly("batch_dim_name", &distribution::ModelParallel::batch_dim_name);
  m.def("set_distribution", [](std::shared_ptr<distribution::Distribution> value) {
    distribution::set_distribution(std::move(value));
  }, "value"_a);
  m.def("distribution", [] { return distribution::distribution(); });
  // Multi-worker: the job the environment describes (chorus launch, TF_CONFIG, torchrun,
  // Open MPI, Slurm). Joining waits for the other workers, so without the GIL.
  m.def("initialize", [] {
    py::gil_scoped_release release;
    distribution::initialize();
  });
  m.def("is_chief", &distribution::is_chief);
  py::class_<distribute::MultiWorkerMirroredStrategy>(m, "MultiWorkerMirroredStrategy")
      .def(py::init([] {
        py::gil_scoped_release release;
        return distribute::MultiWorkerMirroredStrategy();
      }))
      .def_property_readonly("num_replicas_in_sync", &distribute::MultiWorkerMirroredStrategy::num_replicas_in_sync)
      .def_property_readonly("distribution", [](const distribute::MultiWorkerMirroredStrategy& s) {
        return std::static_pointer_cast<distribution::Distribution>(s.distribution());
      })
      .def_property_readonly("task_id", [](const distribute::MultiWorkerMirroredStrategy& s) {
        return s.cluster_resolver().rank;
      })
      .def_property_readonly("num_workers", [](const distribute::MultiWorkerMirroredStrategy& s) {
        return s.cluster_resolver().world_size;
      });
}

}  // namespace chorus::python
