// chorus.Layer and keras.Input: every registered layer is made from Keras's constructor
// arguments as a config (chorus/layers/registry.h), so the Python names, defaults and
// errors are the C++ layers' own. Python subclasses go through PyLayer.
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "chorus/layers/input_layer.h"
#include "chorus/layers/registry.h"
#include "python/src/bindings.h"
#include "python/src/conversions.h"
#include "python/src/py_layer.h"

namespace chorus::python {

using namespace pybind11::literals;
using layers::Layer;

py::object input_shapes(const Tree& inputs) {
  if (inputs.is_tensor()) {
    const Shape& shape = inputs.tensor().shape();
    py::list dims;
    for (int i = 0; i < shape.rank(); ++i) {
      dims.append(i == 0 && shape[0] == 0 ? py::object(py::none()) : py::object(py::int_(shape[i])));
    }
    return py::tuple(dims);
  }
  if (inputs.is_dict()) {
    py::dict shapes;
    for (const auto& [key, item] : inputs.dict()) shapes[py::str(key)] = input_shapes(item);
    return shapes;
  }
  py::list shapes;
  if (inputs.is_list()) {
    for (const Tree& item : inputs.list()) shapes.append(input_shapes(item));
  }
  return shapes;
}

namespace {

using PyLayerBase = PyLayer<Layer>;

PythonSubclass& python_subclass(Layer& layer, const char* what) {
  auto* py_layer = dynamic_cast<PythonSubclass*>(&layer);
  if (py_layer == nullptr) {
    throw py::type_error(layer.name() + ": " + what + " is for layers subclassed in Python");
  }
  return *py_layer;
}

py::list weight_list(const std::vector<autograd::Variable>& weights) {
  py::list out;
  for (const auto& weight : weights) out.append(py::cast(weight));
  return out;
}

// Keras's layer.build(input_shape) called from Python: builds a chorus layer from a
// placeholder of that shape (a None batch becomes 0 rows, as symbolic inputs have). A
// Python subclass's super().build() inside its own build() has nothing to add.
void build_from_shape(Layer& layer, const py::object& input_shape, const std::string& dtype) {
  auto* subclass = dynamic_cast<PythonSubclass*>(&layer);
  if (layer.built() || (subclass != nullptr && subclass->in_python_build())) return;
  std::vector<int64_t> dims;
  for (const py::handle dim : input_shape) dims.push_back(dim.is_none() ? 0 : dim.cast<int64_t>());
  Tensor placeholder = Tensor::empty(Shape(dims), parse_dtype(dtype));
  py::gil_scoped_release release;
  layer.build_from(Tree(placeholder));
}

// layer.<weight name> (Dense.kernel, Embedding.embeddings): Keras's attributes for a
// layer's own weights.
py::object own_weight(const Layer& layer, const std::string& name) {
  for (const auto& weight : layer.own_weights()) {
    if (weight.name() == name) return py::cast(weight);
  }
  throw py::attribute_error("'" + layer.class_name() + "' layer has no attribute '" + name + "'");
}

Shape shape_from(const py::object& shape) {
  std::vector<int64_t> dims;
  for (const py::handle dim : shape) {
    if (dim.is_none()) throw py::value_error("a weight's shape cannot have None dimensions");
    dims.push_back(dim.cast<int64_t>());
  }
  return Shape(dims);
}

void bind_layer_class(py::module_& m) {
  py::class_<Layer, PyLayerBase, std::shared_ptr<Layer>>(m, "Layer", py::dynamic_attr())
      .def(py::init_alias<std::string, std::string>(), "class_name"_a, "name"_a = "")
      .def_property_readonly("name", &Layer::name)
      .def_property_readonly("path", &Layer::path)
      .def_property_readonly("class_name", &Layer::class_name)
      .def_property_readonly("built", &Layer::built)
      .def_property("trainable", &Layer::trainable, &Layer::set_trainable)
      .def_property_readonly("weights", [](const Layer& l) { return weight_list(l.weights()); })
      .def_property_readonly("trainable_weights", [](const Layer& l) { return weight_list(l.trainable_weights()); })
      .def_property_readonly("non_trainable_weights",
                             [](const Layer& l) { return weight_list(l.non_trainable_weights()); })
      // Keras 3's other names for the same lists.
      .def_property_readonly("variables", [](const Layer& l) { return weight_list(l.weights()); })
      .def_property_readonly("trainable_variables", [](const Layer& l) { return weight_list(l.trainable_weights()); })
      .def_property_readonly("non_trainable_variables",
                             [](const Layer& l) { return weight_list(l.non_trainable_weights()); })
      .def_property_readonly("layers", [](const Layer& l) {
        py::list out;
        for (Layer* sublayer : l.layers()) out.append(py::cast(sublayer, py::return_value_policy::reference));
        return out;
      })
      .def("count_params", &Layer::count_params)
      .def("build", &build_from_shape, "input_shape"_a, "dtype"_a = "float32")
      .def("__getattr__", &own_weight)
      .def("get_config", [](const Layer& l) { return from_json(l.get_config()); })
      .def("get_layer", [](const Layer& l, const std::string& name) {
        return py::cast(&l.get_layer(name), py::return_value_policy::reference);
      }, "name"_a)
      .def("get_weights", [](const Layer& l) {
        py::list out;
        for (const auto& weight : l.weights()) out.append(to_numpy(weight.value().clone()));
        return out;
      })
      .def("set_weights", [](const Layer& l, const py::sequence& values) {
        const auto weights = l.weights();
        if (static_cast<size_t>(py::len(values)) != weights.size()) {
          throw py::value_error(l.name() + ": set_weights expected " + std::to_string(weights.size()) +
                                " arrays, got " + std::to_string(py::len(values)));
        }
        for (size_t i = 0; i < weights.size(); ++i) {
          weights[i].assign(to_tensor(values[i], std::string(dtype_name(weights[i].dtype())).c_str()));
        }
      }, "weights"_a)
      .def("__call__", [](const std::shared_ptr<Layer>& layer, const py::object& inputs, bool training) {
        Tree tree = to_tree(inputs);
        Tree out;
        if (numel(tree.flatten()) < kReleaseElements) {  // an embedding lookup of a few ids
          out = layers::call_shared(layer, tree, training);
        } else {
          py::gil_scoped_release release;
          out = layers::call_shared(layer, tree, training);
        }
        return from_tree(out, false);
      }, "inputs"_a, "training"_a = false)
      .def("add_weight", [](Layer& l, const py::object& shape, const py::object& initializer,
                            const std::string& dtype, bool trainable, const std::string& name) {
        layers::Initializer init = py::isinstance<py::str>(initializer)
                                       ? layers::Initializer(initializer.cast<std::string>())
                                       : layers::Initializer::from_config(to_json(initializer));
        return python_subclass(l, "add_weight").add_weight_public(name, shape_from(shape), init, trainable,
                                                                   parse_dtype(dtype));
      }, "shape"_a, "initializer"_a = "glorot_uniform", "dtype"_a = "float32", "trainable"_a = true,
         "name"_a = "weight")
      .def("_track", [](Layer& l, std::shared_ptr<Layer> sublayer) {
        python_subclass(l, "tracking a sublayer").track_public(std::move(sublayer));
      })
      .def("_retain_python_object", [](Layer& l) { python_subclass(l, "retaining").retain_python_object(); })
      .def("__repr__", [](const Layer& l) { return "<" + l.class_name() + " name=" + l.name() + ">"; });
}

}  // namespace

void bind_layers(py::module_& m) {
  bind_layer_class(m);
  m.def("layer_from_config", [](const std::string& class_name, const py::dict& config) {
    return layers::layer_from_config({{"class_name", class_name}, {"config", to_json(config)}});
  }, "class_name"_a, "config"_a);
  m.def("registered_layers", &layers::registered_layers);
  m.def("Input", [](const std::vector<int64_t>& shape, const std::string& dtype, const std::string& name) {
    return layers::Input(Shape(shape), parse_dtype(dtype), name);
  }, "shape"_a, "dtype"_a = "float32", "name"_a = "");
  m.def("reset_names", &Layer::reset_names);
  m.def("set_random_seed", &layers::set_random_seed, "seed"_a);
  m.def("set_global_policy", [](const std::string& policy) { mixed_precision::set_global_policy(mixed_precision::DTypePolicy(policy)); }, "policy"_a);
  m.def("global_policy", [] { return std::string(mixed_precision::global_policy().name()); });
}

}  // namespace chorus::python
