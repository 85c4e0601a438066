// chorus.Tensor, chorus.Variable and chorus.keras.ops: the op set on tensors, arrays and
// Python numbers. Arguments are converted with the GIL held; an op runs without it unless
// it is small (kReleaseElements).
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/core/creation.h"
#include "chorus/ops/ops.h"
#include "python/src/bindings.h"
#include "python/src/conversions.h"

namespace chorus::python {
namespace {

using namespace pybind11::literals;

bool is_python_number(const py::handle& value) {
  return py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value) || py::isinstance<py::bool_>(value);
}

// Two operands of an elementwise op. A Python number takes the other operand's dtype
// (Keras's weak typing: x + 1 keeps x's float32).
std::pair<Tensor, Tensor> operands(const py::handle& a, const py::handle& b) {
  if (is_python_number(a) && !is_python_number(b)) {
    Tensor tb = to_tensor(b);
    return {scalar(a.cast<double>(), tb.dtype()), tb};
  }
  if (is_python_number(b) && !is_python_number(a)) {
    Tensor ta = to_tensor(a);
    return {ta, scalar(b.cast<double>(), ta.dtype())};
  }
  return {to_tensor(a), to_tensor(b)};
}

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
using UnaryFn = Tensor (*)(const Tensor&);

auto binary(BinaryFn fn) {
  return [fn](const py::object& a, const py::object& b) {
    auto [ta, tb] = operands(a, b);
    return released(numel(ta, tb), [&] { return fn(ta, tb); });
  };
}
auto reflected(BinaryFn fn) {
  return [fn](const py::object& a, const py::object& b) {
    auto [tb, ta] = operands(b, a);
    return released(numel(ta, tb), [&] { return fn(tb, ta); });
  };
}
auto unary(UnaryFn fn) {
  return [fn](const py::object& x) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return fn(t); });
  };
}

// Keras's axis argument: None (every axis), an int, or a list/tuple of ints.
ops::Axes axes_of(const py::object& axis) {
  if (axis.is_none()) return {};
  if (py::isinstance<py::int_>(axis)) return axis.cast<int>();
  return axis.cast<std::vector<int>>();
}

std::vector<int64_t> dims_of(const Tensor& tensor) { return {tensor.shape().begin(), tensor.shape().end()}; }

// Python's operators, for tensors and for variables (which compute with their value).
template <class C>
void def_arithmetic(py::class_<C>& cls) {
  cls.def("__add__", binary(&ops::add)).def("__radd__", reflected(&ops::add))
      .def("__sub__", binary(&ops::subtract)).def("__rsub__", reflected(&ops::subtract))
      .def("__mul__", binary(&ops::multiply)).def("__rmul__", reflected(&ops::multiply))
      .def("__truediv__", binary(&ops::divide)).def("__rtruediv__", reflected(&ops::divide))
      .def("__pow__", binary(&ops::power)).def("__rpow__", reflected(&ops::power))
      .def("__matmul__", [](const py::object& a, const py::object& b) {
        Tensor ta = to_tensor(a), tb = to_tensor(b);
        return released(numel(ta, tb), [&] { return ops::matmul(ta, tb); });
      })
      .def("__neg__", unary(&ops::negative))
      .def("__abs__", unary(&ops::abs))
      .def("__lt__", binary(&ops::less)).def("__le__", binary(&ops::less_equal))
      .def("__gt__", binary(&ops::greater)).def("__ge__", binary(&ops::greater_equal));
}

void bind_tensor_class(py::module_& m) {
  auto tensor = py::class_<Tensor>(m, "Tensor", "A chorus tensor (dense, row-major). np.asarray(t) shares its memory.")
      .def(py::init([](const py::object& value, const std::optional<std::string>& dtype) {
             return to_tensor(value, dtype ? dtype->c_str() : nullptr);
           }),
           "value"_a, "dtype"_a = py::none())
      .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(dims_of(t))); })
      .def_property_readonly("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
      .def_property_readonly("ndim", &Tensor::rank)
      .def("numpy", &to_numpy)
      .def("__array__", [](const Tensor& t, const py::object& dtype, const py::object&) {
             py::array out = to_numpy(t);
             return dtype.is_none() ? out : py::array(out.attr("astype")(dtype));
           }, "dtype"_a = py::none(), "copy"_a = py::none())
      .def("__len__", [](const Tensor& t) {
        if (t.rank() == 0) throw py::type_error("len() of a 0-d tensor");
        return t.dim(0);
      })
      .def("__getitem__", [](const Tensor& t, const py::object& index) {
        return to_tensor(py::module_::import("numpy").attr("array")(to_numpy(t)[index]));
      })
      .def("__float__", [](const Tensor& t) { return t.item<double>(); })
      .def("__int__", [](const Tensor& t) { return t.item<int64_t>(); })
      .def("__bool__", [](const Tensor& t) { return t.item<double>() != 0; })
      .def("__round__", [](const Tensor& t, const py::object& ndigits) {
        return py::module_::import("builtins").attr("round")(t.item<double>(), ndigits);
      }, "ndigits"_a = py::none())
      .def("__repr__", [](const Tensor& t) { return "<chorus.Tensor " + t.to_string() + ">"; });
  def_arithmetic(tensor);

  auto variable = py::class_<autograd::Variable>(m, "Variable", "A model weight: a tensor that assign() changes in place.")
      .def_property_readonly("value", &autograd::Variable::value)
      .def_property_readonly("path", &autograd::Variable::path)
      .def_property_readonly("name", &autograd::Variable::name)
      .def_property_readonly("trainable", &autograd::Variable::trainable)
      .def_property_readonly("shape", [](const autograd::Variable& v) { return py::tuple(py::cast(dims_of(v.value()))); })
      .def_property_readonly("dtype", [](const autograd::Variable& v) { return std::string(dtype_name(v.dtype())); })
      .def("numpy", [](const autograd::Variable& v) { return to_numpy(v.value().clone()); })
      .def("__array__", [](const autograd::Variable& v, const py::object&, const py::object&) {
        return to_numpy(v.value().clone());
      }, "dtype"_a = py::none(), "copy"_a = py::none())
      .def("assign", [](const autograd::Variable& v, const py::object& value) {
        Tensor t = to_tensor(value, std::string(dtype_name(v.dtype())).c_str());
        py::gil_scoped_release release;
        v.assign(t);
      })
      .def("__repr__", [](const autograd::Variable& v) { return "<chorus.Variable path=" + v.path() + ">"; });
  def_arithmetic(variable);
}

void bind_elementwise_ops(py::module_& ops) {
  ops.def("add", binary(&ops::add));
  ops.def("subtract", binary(&ops::subtract));
  ops.def("multiply", binary(&ops::multiply));
  ops.def("divide", binary(&ops::divide));
  ops.def("maximum", binary(&ops::maximum));
  ops.def("minimum", binary(&ops::minimum));
  ops.def("power", binary(&ops::power));
  ops.def("equal", binary(&ops::equal));
  ops.def("not_equal", binary(&ops::not_equal));
  ops.def("less", binary(&ops::less));
  ops.def("less_equal", binary(&ops::less_equal));
  ops.def("greater", binary(&ops::greater));
  ops.def("greater_equal", binary(&ops::greater_equal));
  ops.def("negative", unary(&ops::negative));
  ops.def("abs", unary(&ops::abs));
  ops.def("square", unary(&ops::square));
  ops.def("exp", unary(&ops::exp));
  ops.def("log", unary(&ops::log));
  ops.def("sqrt", unary(&ops::sqrt));
  ops.def("rsqrt", unary(&ops::rsqrt));
  ops.def("relu", unary(&ops::relu));
  ops.def("sigmoid", unary(&ops::sigmoid));
  ops.def("tanh", unary(&ops::tanh));
  ops.def("softplus", unary(&ops::softplus));
  ops.def("gelu", [](const py::object& x, bool approximate) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return ops::gelu(t, approximate); });
  }, "x"_a, "approximate"_a = true);
  ops.def("clip", [](const py::object& x, double x_min, double x_max) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return ops::clip(t, x_min, x_max); });
  }, "x"_a, "x_min"_a, "x_max"_a);
  ops.def("where", [](const py::object& condition, const py::object& x1, const py::object& x2) {
    Tensor c = to_tensor(condition);
    auto [a, b] = operands(x1, x2);
    return released(numel(c, a, b), [&] { return ops::where(c, a, b); });
  }, "condition"_a, "x1"_a, "x2"_a);
  ops.def("cast", [](const py::object& x, const std::string& dtype) { return to_tensor(x, dtype.c_str()); },
          "x"_a, "dtype"_a);
  ops.def("matmul", [](const py::object& a, const py::object& b) {
    Tensor ta = to_tensor(a), tb = to_tensor(b);
    return released(numel(ta, tb), [&] { return ops::matmul(ta, tb); });
  }, "x1"_a, "x2"_a);
}

void bind_reduction_and_shape_ops(py::module_& ops) {
  using Reduce = Tensor (*)(const Tensor&, const ops::Axes&, bool);
  for (auto [name, fn] : {std::pair<const char*, Reduce>{"sum", &ops::sum}, {"mean", &ops::mean},
                          {"max", &ops::max}, {"min", &ops::min}, {"logsumexp", &ops::logsumexp}}) {
    ops.def(name, [fn](const py::object& x, const py::object& axis, bool keepdims) {
      Tensor t = to_tensor(x);
      ops::Axes axes = axes_of(axis);
      return released(numel(t), [&] { return fn(t, axes, keepdims); });
    }, "x"_a, "axis"_a = py::none(), "keepdims"_a = false);
  }
  ops.def("argmax", [](const py::object& x, int axis, bool keepdims) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return ops::argmax(t, axis, keepdims); });
  }, "x"_a, "axis"_a = -1, "keepdims"_a = false);
  ops.def("softmax", [](const py::object& x, int axis) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return ops::softmax(t, axis); });
  }, "x"_a, "axis"_a = -1);
  ops.def("log_softmax", [](const py::object& x, int axis) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return ops::log_softmax(t, axis); });
  }, "x"_a, "axis"_a = -1);
  ops.def("one_hot", [](const py::object& x, int64_t num_classes, const std::string& dtype) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return ops::one_hot(t, num_classes, parse_dtype(dtype)); });
  }, "x"_a, "num_classes"_a, "dtype"_a = "float32");
  ops.def("take", [](const py::object& x, const py::object& indices, int axis) {
    Tensor t = to_tensor(x), i = to_tensor(indices);
    return released(numel(t, i), [&] { return ops::take(t, i, axis); });
  }, "x"_a, "indices"_a, "axis"_a = 0);
  ops.def("top_k", [](const py::object& x, int64_t k, bool sorted) {
    Tensor t = to_tensor(x);
    py::gil_scoped_release release;
    return ops::top_k(t, k, sorted);
  }, "x"_a, "k"_a, "sorted"_a = true);
  ops.def("reshape", [](const py::object& x, const std::vector<int64_t>& newshape) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return ops::reshape(t, newshape); });
  }, "x"_a, "newshape"_a);
  ops.def("expand_dims", [](const py::object& x, int axis) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return ops::expand_dims(t, axis); });
  }, "x"_a, "axis"_a);
  ops.def("squeeze", [](const py::object& x, const std::optional<int>& axis) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return axis ? ops::squeeze(t, *axis) : ops::squeeze(t); });
  }, "x"_a, "axis"_a = py::none());
  ops.def("transpose", [](const py::object& x, const std::optional<std::vector<int>>& axes) {
    Tensor t = to_tensor(x);
    return released(numel(t), [&] { return ops::transpose(t, axes.value_or(std::vector<int>{})); });
  }, "x"_a, "axes"_a = py::none());
  ops.def("concatenate", [](const py::sequence& xs, int axis) {
    std::vector<Tensor> ts;
    for (const py::handle x : xs) ts.push_back(to_tensor(x));
    return released(numel(ts), [&] { return ops::concatenate(ts, axis); });
  }, "xs"_a, "axis"_a = 0);
  ops.def("stack", [](const py::sequence& xs, int axis) {
    std::vector<Tensor> ts;
    for (const py::handle x : xs) ts.push_back(to_tensor(x));
    return released(numel(ts), [&] { return ops::stack(ts, axis); });
  }, "x"_a, "axis"_a = 0);
  ops.def("shape", [](const py::object& x) { return py::tuple(py::cast(dims_of(to_tensor(x)))); }, "x"_a);
  ops.def("convert_to_tensor", [](const py::object& x, const std::optional<std::string>& dtype) {
    return to_tensor(x, dtype ? dtype->c_str() : nullptr);
  }, "x"_a, "dtype"_a = py::none());
  ops.def("convert_to_numpy", [](const py::object& x) { return to_numpy(to_tensor(x)); }, "x"_a);
}

}  // namespace

void bind_tensors(py::module_& m) {
  bind_tensor_class(m);
  py::module_ ops = m.def_submodule("ops", "keras.ops: the op set");
  bind_elementwise_ops(ops);
  bind_reduction_and_shape_ops(ops);
}

}  // namespace chorus::python
