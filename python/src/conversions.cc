#include "python/src/conversions.h"

#include <cstring>
#include <string>
#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/core/error.h"
#include "chorus/ops/ops.h"

namespace chorus::python {
namespace {

using namespace pybind11::literals;

Shape shape_of(const py::array& array) {
  std::vector<int64_t> dims(static_cast<size_t>(array.ndim()));
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = array.shape(static_cast<py::ssize_t>(i));
  return Shape(dims);
}

// Copies a C-contiguous array of exactly T into a new tensor.
template <class T>
Tensor copy_array(const py::handle& value) {
  auto array = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(value);
  if (!array) throw py::error_already_set();
  Tensor out = Tensor::empty(shape_of(array), dtype_of<T>);
  if (out.numel() > 0) std::memcpy(out.raw_data(), array.data(), out.nbytes());
  return out;
}

Tensor string_tensor(const py::array& array) {
  std::vector<std::string> values;
  values.reserve(static_cast<size_t>(array.size()));
  for (const py::handle item : array.attr("ravel")()) {
    if (py::isinstance<py::bytes>(item)) {
      values.push_back(item.cast<std::string>());
    } else if (py::isinstance<py::str>(item)) {
      values.push_back(item.cast<std::string>());  // UTF-8
    } else {
      throw_error<ValueError>("convert_to_tensor: expected str or bytes elements in an object array, got {}",
                              std::string(py::str(item.get_type().attr("__name__"))));
    }
  }
  return Tensor::from_strings(shape_of(array), std::move(values));
}

Tensor array_to_tensor(const py::handle& value, bool python_literal) {
  py::array array = py::array::ensure(value);
  if (!array) {
    PyErr_Clear();
    throw_error<ValueError>("convert_to_tensor: cannot convert a {} to a tensor",
                            std::string(py::str(value.get_type().attr("__name__"))));
  }
  const char kind = array.dtype().kind();
  const auto size = array.dtype().itemsize();
  switch (kind) {
    case 'f': return copy_array<float>(array);
    case 'b': return copy_array<bool>(array);
    case 'u':
      if (size == 1) return copy_array<uint8_t>(array);
      [[fallthrough]];
    case 'i':
      // Python ints become int32, as Keras's backends convert them; NumPy's int64 stays.
      if (size == 8 && !python_literal) return copy_array<int64_t>(array);
      return copy_array<int32_t>(array);
    case 'S':
    case 'U':
    case 'O': return string_tensor(array);
    default:
      throw_error<ValueError>("convert_to_tensor: unsupported NumPy dtype {}", std::string(py::str(array.dtype())));
  }
}

}  // namespace

Tensor to_tensor(const py::handle& value, const char* dtype) {
  Tensor tensor;
  if (py::isinstance<Tensor>(value)) {
    tensor = value.cast<Tensor>();
  } else if (py::isinstance<autograd::Variable>(value)) {
    tensor = value.cast<autograd::Variable>().value();
  } else {
    tensor = array_to_tensor(value, !py::isinstance<py::array>(value));
  }
  if (dtype != nullptr) {
    const DType want = parse_dtype(dtype);
    if (tensor.dtype() != want) tensor = ops::cast(tensor, want);
  }
  return tensor;
}

py::array to_numpy(const Tensor& tensor) {
  if (tensor.dtype() == kString) {
    py::list values;
    for (const std::string& value : tensor.strings()) values.append(py::bytes(value));
    py::array out = py::module_::import("numpy").attr("array")(values, "dtype"_a = "object");
    std::vector<py::ssize_t> dims(tensor.shape().begin(), tensor.shape().end());
    return out.attr("reshape")(py::tuple(py::cast(dims)));
  }
  const Tensor host = tensor.dtype() == kBFloat16 ? ops::cast(tensor, kFloat32) : tensor;
  py::dtype dtype;
  switch (host.dtype()) {
    case kFloat32: dtype = py::dtype::of<float>(); break;
    case kInt32: dtype = py::dtype::of<int32_t>(); break;
    case kInt64: dtype = py::dtype::of<int64_t>(); break;
    case kBool: dtype = py::dtype::of<bool>(); break;
    case DType::kUInt8: dtype = py::dtype::of<uint8_t>(); break;
    default: throw_error<ValueError>("convert_to_numpy: unsupported dtype {}", dtype_name(host.dtype()));
  }
  std::vector<py::ssize_t> dims(host.shape().begin(), host.shape().end());
  // The capsule owns a tensor handle, so the array keeps the storage alive.
  auto* owner = new Tensor(host);
  py::capsule base(owner, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dtype, dims, {}, host.raw_data(), base);
}

Tree to_tree(const py::handle& value) {
  if (value.is_none()) return Tree();
  if (py::isinstance<py::dict>(value)) {
    Tree::Dict dict;
    for (const auto& [key, item] : value.cast<py::dict>()) {
      if (!py::isinstance<py::str>(key)) {
        throw_error<ValueError>("expected str keys in a dict of inputs, got {}", std::string(py::repr(key)));
      }
      dict.emplace(key.cast<std::string>(), to_tree(item));
    }
    return Tree(std::move(dict));
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    Tree::List list;
    for (const py::handle item : value) list.push_back(to_tree(item));
    return Tree(std::move(list));
  }
  return Tree(to_tensor(value));
}

py::object from_tree(const Tree& tree, bool numpy, bool tuples) {
  if (tree.empty()) return py::none();
  if (tree.is_tensor()) return numpy ? py::object(to_numpy(tree.tensor())) : py::cast(tree.tensor());
  if (tree.is_dict()) {
    py::dict dict;
    for (const auto& [key, item] : tree.dict()) dict[py::str(key)] = from_tree(item, numpy, tuples);
    return dict;
  }
  py::list list;
  for (const Tree& item : tree.list()) list.append(from_tree(item, numpy, tuples));
  if (tuples) return py::tuple(list);
  return list;
}

nlohmann::json to_json(const py::handle& value) {
  if (value.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    // As JSON text parses: a non-negative integer is unsigned (config readers ask for that).
    const auto number = value.cast<int64_t>();
    return number >= 0 ? nlohmann::json(static_cast<uint64_t>(number)) : nlohmann::json(number);
  }
  if (py::isinstance<py::float_>(value)) return value.cast<double>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::isinstance<py::dict>(value)) {
    nlohmann::json object = nlohmann::json::object();
    for (const auto& [key, item] : value.cast<py::dict>()) object[py::str(key).cast<std::string>()] = to_json(item);
    return object;
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    nlohmann::json array = nlohmann::json::array();
    for (const py::handle item : value) array.push_back(to_json(item));
    return array;
  }
  if (py::hasattr(value, "to_config")) return to_json(value.attr("to_config")());
  if (py::isinstance<py::array>(value) || py::hasattr(value, "item")) return to_json(value.attr("tolist")());
  if (PyCallable_Check(value.ptr()) && py::hasattr(value, "__name__")) return value.attr("__name__").cast<std::string>();
  throw_error<ValueError>("cannot use a {} as a configuration value",
                          std::string(py::str(value.get_type().attr("__name__"))));
}

py::object from_json(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(value.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(value.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(value.get<uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(value.get<double>());
    case nlohmann::json::value_t::string: return py::str(value.get<std::string>());
    case nlohmann::json::value_t::array: {
      py::list list;
      for (const auto& item : value) list.append(from_json(item));
      return list;
    }
    case nlohmann::json::value_t::object: {
      py::dict dict;
      for (const auto& [key, item] : value.items()) dict[py::str(key)] = from_json(item);
      return dict;
    }
    default: return py::none();
  }
}

py::dict logs_dict(const models::Logs& logs) {
  py::dict out;
  for (const auto& [name, value] : logs) out[py::str(name)] = value;
  return out;
}

// A nested dict (Keras 3's "compile_metrics" result) adds its entries, as Keras flattens it.
static void add_logs(const py::dict& entries, models::Logs& logs) {
  for (const auto& [name, value] : entries) {
    if (py::isinstance<py::dict>(value)) add_logs(value.cast<py::dict>(), logs);
    else logs.set(py::str(name).cast<std::string>(), to_tensor(value).item<double>());
  }
}

models::Logs logs_of(const py::handle& dict, const char* who) {
  if (!py::isinstance<py::dict>(dict)) {
    throw py::type_error(std::string(who) + ": expected a dict of metric names to values, got " +
                         py::str(py::type::of(dict)).cast<std::string>());
  }
  models::Logs logs;
  add_logs(dict.cast<py::dict>(), logs);
  return logs;
}

}  // namespace chorus::python
