// EinsumDense as one matmul: the input (lead..., contracted...) is viewed as
// (lead..., C) with C the product of the contracted dims, the kernel (contracted...,
// out...) as (C, O), and their product (lead..., O) as (lead..., out...). "lead" is the
// free letters (with "...": the axes it stands for, then the free letters).
#include "chorus/layers/einsum_dense.h"

#include <algorithm>
#include <regex>

#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {
namespace {

constexpr const char* kEinsumSupported =
    "EinsumDense supports the equations one matmul computes: "
    "'<free><contracted>,<contracted><out>-><free><out>', optionally with '...' leading the input and output, "
    "e.g. 'ab,bc->ac', 'abc,cd->abd', 'abc,cde->abde', 'abcd,cde->abe', '...b,bc->...c'";

[[noreturn]] void throw_unsupported_einsum(const std::string& equation, const std::string& why) {
  throw_error<ValueError>("EinsumDense: unsupported equation '{}': {}. {}", equation, why, kEinsumSupported);
}

std::string einsum_dims_string(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + (dims[i] < 0 ? "None" : std::to_string(dims[i]));
  return out + (dims.size() == 1 ? ",)" : ")");
}

bool einsum_has(const std::string& s, char c) { return s.find(c) != std::string::npos; }

int64_t einsum_product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

}  // namespace

EinsumDense::EinsumDense(std::string equation, std::vector<int64_t> output_shape, EinsumDenseOptions options)
    : Layer("EinsumDense", options.name),
      equation_(std::move(equation)),
      output_shape_(std::move(output_shape)),
      options_(std::move(options)) {
  static const std::regex form(R"(^(\.\.\.)?([a-zA-Z]+),([a-zA-Z]+)->(\.\.\.)?([a-zA-Z]+)$)");
  std::smatch m;
  if (!std::regex_match(equation_, m, form)) {
    throw_error<ValueError>(
        "EinsumDense: invalid equation '{}': expected '[X],[Y]->[Z]' or '...[X],[Y]->...[Z]'. {}", equation_,
        kEinsumSupported);
  }
  if (m[1].matched != m[4].matched) {
    throw_unsupported_einsum(equation_, "'...' must lead both the input and the output");
  }
  elided_ = m[1].matched;
  const std::string in = m[2], kernel = m[3], out = m[5];
  for (const std::string* spec : {&in, &kernel, &out}) {
    for (char c : *spec) {
      if (std::count(spec->begin(), spec->end(), c) > 1) {
        throw_unsupported_einsum(equation_, fmt::format("letter '{}' repeats in '{}'", c, *spec));
      }
    }
  }
  for (char c : out) {
    if (!einsum_has(in, c) && !einsum_has(kernel, c)) {
      throw_error<ValueError>("EinsumDense: equation '{}': output letter '{}' is in neither the input '{}' nor the "
                              "kernel '{}'",
                              equation_, c, in, kernel);
    }
  }
  for (char c : in) {
    if (einsum_has(out, c) && einsum_has(kernel, c)) {
      throw_unsupported_einsum(equation_, fmt::format("letter '{}' is in all three specs", c));
    }
    if (!einsum_has(out, c) && !einsum_has(kernel, c)) {
      throw_unsupported_einsum(equation_, fmt::format("input letter '{}' is summed away", c));
    }
    (einsum_has(out, c) ? free_ : contracted_) += c;
  }
  for (char c : kernel) {
    if (!einsum_has(in, c)) out_ += c;
  }
  if (contracted_.empty()) throw_unsupported_einsum(equation_, "no letter is contracted");
  if (in != free_ + contracted_) {
    throw_unsupported_einsum(equation_, "the input must be its free letters, then the contracted ones");
  }
  if (kernel != contracted_ + out_) {
    throw_unsupported_einsum(equation_, "the kernel must be the contracted letters, then the output ones");
  }
  if (out != free_ + out_) {
    throw_unsupported_einsum(equation_, "the output must be the free letters, then the kernel's output ones");
  }
  if (!elided_ && free_.empty()) throw_unsupported_einsum(equation_, "the first input letter must be the batch axis");
  const size_t want = out.size() - (elided_ ? 0 : 1);
  if (output_shape_.size() != want) {
    throw_error<ValueError>(
        "EinsumDense: expected output_shape with {} dims for equation '{}' (the output '{}'{}). Received: "
        "output_shape={}",
        want, equation_, out, elided_ ? " after '...'" : " without its batch axis", einsum_dims_string(output_shape_));
  }
  for (size_t i = 0; i < out_.size(); ++i) {
    if (output_shape_[want - out_.size() + i] <= 0) {
      throw_error<ValueError>("EinsumDense: output_shape must give the size of kernel letter '{}' for equation '{}'. "
                              "Received: output_shape={}",
                              out_[i], equation_, einsum_dims_string(output_shape_));
    }
  }
  for (char c : options_.bias_axes) {
    if (!einsum_has(out, c)) {
      throw_error<ValueError>("EinsumDense: bias dimension '{}' was requested, but is not part of the output spec "
                              "'{}'. Received: bias_axes='{}'",
                              c, out, options_.bias_axes);
    }
  }
  set_input_spec(rank_spec());
}

InputSpec EinsumDense::rank_spec() const {
  const int rank = static_cast<int>(free_.size() + contracted_.size());
  return elided_ ? InputSpec{.min_ndim = rank + 1} : InputSpec{.ndim = rank};
}

void EinsumDense::build(const Tree& inputs) {
  const Tensor& x = detail::single_input(inputs, name());  // of the equation's rank: input_spec()
  const int lead = x.rank() - static_cast<int>(free_.size() + contracted_.size());  // axes "..." stands for
  // output_shape lists the output after its batch axis (non-elided) or after "...".
  auto partial_at = [&](size_t output_letter) -> int64_t {
    const size_t i = elided_ ? output_letter : output_letter - 1;
    return (!elided_ && output_letter == 0) ? -1 : output_shape_[i];
  };
  for (size_t i = 0; i < free_.size(); ++i) {
    const int64_t have = x.dim(lead + static_cast<int>(i)), given = partial_at(i);
    if (given >= 0 && given != have) {
      throw_error<ShapeError>("{}: input shape and output shape do not match at shared dimension '{}': input {} has "
                              "{}, output_shape {} has {}",
                              name(), free_[i], x.shape().to_string(), have, einsum_dims_string(output_shape_), given);
    }
  }
  contracted_dims_.clear();
  out_dims_.clear();
  for (size_t i = 0; i < contracted_.size(); ++i) {
    contracted_dims_.push_back(x.dim(lead + static_cast<int>(free_.size() + i)));
  }
  for (size_t i = 0; i < out_.size(); ++i) out_dims_.push_back(partial_at(free_.size() + i));
  InputSpec spec = rank_spec();  // and the contracted axes, counted from the end
  const int contracted = static_cast<int>(contracted_dims_.size());
  for (int i = 0; i < contracted; ++i) spec.axes[i - contracted] = contracted_dims_[static_cast<size_t>(i)];
  set_input_spec(std::move(spec));
  std::vector<int64_t> kernel_shape = contracted_dims_;
  kernel_shape.insert(kernel_shape.end(), out_dims_.begin(), out_dims_.end());
  std::vector<int> input_axes, output_axes;
  for (size_t i = 0; i < kernel_shape.size(); ++i) {
    (i < contracted_.size() ? input_axes : output_axes).push_back(static_cast<int>(i));
  }
  kernel_ = add_weight("kernel", Shape(kernel_shape),
                       options_.kernel_initializer.with_fan_axes(input_axes, output_axes));
  if (options_.bias_axes.empty()) return;
  // Keras's bias: the output from its first bias letter on, 1 on letters not listed.
  const std::string out = free_ + out_;
  size_t first = out.size();
  for (char c : options_.bias_axes) first = std::min(first, out.find(c));
  std::vector<int64_t> bias_shape;
  for (size_t i = first; i < out.size(); ++i) {
    if (!einsum_has(options_.bias_axes, out[i])) {
      bias_shape.push_back(1);
    } else if (i < free_.size()) {
      bias_shape.push_back(x.dim(lead + static_cast<int>(i)));
    } else {
      bias_shape.push_back(out_dims_[i - free_.size()]);
    }
  }
  bias_ = add_weight("bias", Shape(bias_shape), options_.bias_initializer);
}

Tree EinsumDense::call(const Tree& inputs, bool /*training*/) {
  const Tensor& input = detail::single_input(inputs, name());  // rank and contracted dims: input_spec()
  const int contracted_at = input.rank() - static_cast<int>(contracted_.size());
  std::vector<int64_t> lead(input.shape().begin(), input.shape().begin() + contracted_at);
  const Tensor x = input.dtype() == kernel_.dtype() ? input : ops::cast(input, kernel_.dtype());
  // x: (lead..., C) @ kernel: (C, O) -> (lead..., O) -> (lead..., out...)
  const int64_t c = einsum_product(contracted_dims_), o = einsum_product(out_dims_);
  std::vector<int64_t> x2 = lead;
  x2.push_back(c);
  const Tensor xm = contracted_dims_.size() == 1 ? x : ops::reshape(x, x2);
  const Tensor km = kernel_.shape().rank() == 2 ? kernel_.value() : ops::reshape(kernel_.value(), {c, o});
  Tensor y = ops::matmul(xm, km);
  if (out_dims_.size() != 1) {
    std::vector<int64_t> full = lead;
    full.insert(full.end(), out_dims_.begin(), out_dims_.end());
    y = ops::reshape(y, full);
  }
  if (bias_.defined()) y = y + bias_.value();
  if (!options_.activation.is_linear()) y = options_.activation(y);
  return y;
}

nlohmann::json EinsumDense::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["equation"] = equation_;
  nlohmann::json shape = nlohmann::json::array();
  for (int64_t d : output_shape_) shape.push_back(d < 0 ? nlohmann::json(nullptr) : nlohmann::json(d));
  config["output_shape"] = shape;
  config["activation"] = options_.activation.get_config();
  config["bias_axes"] = options_.bias_axes.empty() ? nlohmann::json(nullptr) : nlohmann::json(options_.bias_axes);
  config["kernel_initializer"] = options_.kernel_initializer.get_config();
  config["bias_initializer"] = options_.bias_initializer.get_config();
  return config;
}

std::shared_ptr<EinsumDense> EinsumDense::from_config(const nlohmann::json& config) {
  ConfigReader r("EinsumDense", config);
  r.require({"output_shape"});
  const std::string equation = r.string("equation", "");
  std::vector<int64_t> output_shape;
  if (const nlohmann::json& shape = r.raw("output_shape"); shape.is_number_integer()) {
    output_shape.push_back(shape.get<int64_t>());  // Keras accepts an int for one dim
  } else {
    output_shape = detail::dims_or_null(r, "output_shape");
  }
  EinsumDenseOptions options;
  detail::read_dense_keys(r, options);
  options.bias_axes = r.string("bias_axes", "");
  options.name = detail::config_name(r);
  auto layer = std::make_shared<EinsumDense>(equation, std::move(output_shape), std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
