// MultiHeadAttention. Projected tensors keep Keras's layout (B, <query axes>, N, D). For
// the usual rank-3 inputs they go to ops::dot_product_attention as they are; with more
// query axes, the axes not attended over fold into the batch and the attended ones into
// one sequence axis (a softmax over several axes is one over their flattening), and the
// results unfold back to Keras's shapes: output (B, <query axes>, E), scores
// (B, <other axes>, N, <attended query axes>, <attended key axes>).
#include "chorus/layers/multi_head_attention.h"

#include <algorithm>
#include <numeric>

#include "chorus/layers/layer_util.h"
#include "chorus/ops/attention.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {
namespace {

// Keras's _build_proj_equation: "abc,cde->abde" for free_dims 2, bound 1, output 2.
struct AttentionProjection {
  std::string equation, bias_axes;
};

AttentionProjection attention_projection(int free_dims, int bound_dims, int output_dims) {
  std::string in, kernel, out, bias;
  char c = 'a';
  for (int i = 0; i < free_dims; ++i, ++c) {
    in += c;
    out += c;
  }
  for (int i = 0; i < bound_dims; ++i, ++c) {
    in += c;
    kernel += c;
  }
  for (int i = 0; i < output_dims; ++i, ++c) {
    kernel += c;
    out += c;
    bias += c;
  }
  return {in + "," + kernel + "->" + out, bias};
}

std::string attention_dims_string(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

// A handle on `t` outside any functional graph: sublayers called from call() on a
// symbolic input would otherwise record nodes of their own.
Tensor off_graph_attention_input(const Tensor& t) { return t.defined() && is_symbolic(t) ? t.view(t.shape()) : t; }

// How projected tensors (B, <query axes>, N, D) fold to (B', T', N, D) and back.
struct AttentionFold {
  std::vector<int> batch_axes, attended;  // axes of the unprojected input, batch first
  bool identity() const { return attended.size() == 1 && batch_axes.size() == 1; }

  Tensor fold(const Tensor& x) const {
    if (identity()) return x;
    const int r = x.rank();
    std::vector<int> perm = batch_axes;
    perm.insert(perm.end(), attended.begin(), attended.end());
    perm.push_back(r - 2);
    perm.push_back(r - 1);
    int64_t b = 1, t = 1;
    for (int a : batch_axes) b *= x.dim(a);
    for (int a : attended) t *= x.dim(a);
    return ops::reshape(ops::transpose(x, perm), {b, t, x.dim(-2), x.dim(-1)});
  }

  // o (B', T', N, D) -> (B, <query axes>, N, D) shaped like `like` but for D.
  Tensor unfold(const Tensor& o, const Tensor& like) const {
    if (identity()) return o;
    const int r = like.rank();
    std::vector<int> perm = batch_axes;
    perm.insert(perm.end(), attended.begin(), attended.end());
    perm.push_back(r - 2);
    perm.push_back(r - 1);
    std::vector<int64_t> dims;
    for (int a : perm) dims.push_back(like.dim(a));
    dims.back() = o.dim(-1);
    std::vector<int> inverse(perm.size());
    for (size_t j = 0; j < perm.size(); ++j) inverse[perm[j]] = static_cast<int>(j);
    return ops::transpose(ops::reshape(o, dims), inverse);
  }

  // Keras's attention_mask as the fused op takes it, for the scores `scores_shape` of
  // folded q and k: the mask gains axes just before the attended ones (the heads' axis
  // first) until it has the scores' rank, then broadcasts; nonzero attends.
  Tensor fold_mask(const Tensor& attention_mask, const std::vector<int64_t>& scores_shape, const Tensor& q,
                   const Tensor& k, const std::string& layer) const {
    Tensor mask = off_graph_attention_input(attention_mask);
    const int expand_at = -2 * static_cast<int>(attended.size()) - 1;
    const int rank = static_cast<int>(scores_shape.size());
    bool ok = mask.rank() <= rank;
    while (ok && mask.rank() < rank) mask = ops::expand_dims(mask, expand_at);
    for (int i = 0; ok && i < rank; ++i) ok = mask.dim(i) == 1 || mask.dim(i) == scores_shape[i];
    if (!ok) {
      throw_error<ShapeError>(
          "{}: attention_mask of shape {} does not broadcast to the attention scores {} (the heads' axis inserted "
          "before the query's)",
          layer, attention_mask.shape().to_string(), attention_dims_string(scores_shape));
    }
    mask = ops::cast(mask, kBool);
    if (identity()) return mask;
    std::vector<int64_t> full = scores_shape;
    const size_t heads_at = batch_axes.size();
    full[heads_at] = mask.dim(static_cast<int>(heads_at));
    return ops::reshape(ops::broadcast_to(mask, Shape(full)), {q.dim(0), full[heads_at], q.dim(1), k.dim(1)});
  }
};

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options)
    : Layer("MultiHeadAttention", options.name),
      num_heads_(num_heads),
      key_dim_(key_dim),
      options_(std::move(options)) {
  if (num_heads <= 0) {
    throw_error<ValueError>(
        "MultiHeadAttention: expected a positive integer for num_heads. Received: num_heads={}", num_heads);
  }
  if (key_dim <= 0) {
    throw_error<ValueError>("MultiHeadAttention: expected a positive integer for key_dim. Received: key_dim={}",
                            key_dim);
  }
  if (options_.value_dim < 0) {
    throw_error<ValueError>(
        "MultiHeadAttention: expected a positive integer or 0 (None) for value_dim. Received: value_dim={}",
        options_.value_dim);
  }
  if (!(options_.dropout >= 0 && options_.dropout <= 1)) {
    throw_error<ValueError>("MultiHeadAttention: expected dropout in [0, 1]. Received: dropout={}", options_.dropout);
  }
  for (int64_t d : options_.output_shape) {
    if (d <= 0) {
      throw_error<ValueError>("MultiHeadAttention: expected output_shape dims > 0. Received: output_shape={}",
                              attention_dims_string(options_.output_shape));
    }
  }
}

std::vector<int> MultiHeadAttention::resolved_axes(int query_rank) const {
  std::vector<int> axes;
  if (options_.attention_axes.empty()) {
    for (int a = 1; a <= query_rank - 2; ++a) axes.push_back(a);
    return axes;
  }
  for (int a : options_.attention_axes) {
    const int axis = a < 0 ? query_rank + a : a;
    if (axis < 1 || axis > query_rank - 2) {
      throw_error<ValueError>(
          "{}: attention_axes must be query axes in [1, {}] (neither the batch nor the feature axis). Received: "
          "attention_axes={} for a query of rank {}",
          name(), query_rank - 2, nlohmann::json(options_.attention_axes).dump(), query_rank);
    }
    axes.push_back(axis);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

MultiHeadAttention::Inputs MultiHeadAttention::unpack(const Tree& inputs) const {
  Inputs in;
  auto bad = [&] {
    throw_error<ValueError>(
        "{}: expected [query, value], [query, value, key] or a dict with 'query', 'value' and optionally 'key' and "
        "'attention_mask'; got {}",
        name(), inputs.empty() ? std::string("nothing") : inputs.to_string());
  };
  if (inputs.is_list()) {
    const auto& l = inputs.list();
    if (l.size() < 2 || l.size() > 3) bad();
    for (const Tree& t : l) {
      if (!t.is_tensor()) bad();
    }
    in.query = l[0].tensor();
    in.value = l[1].tensor();
    if (l.size() == 3) in.key = l[2].tensor();
  } else if (inputs.is_dict()) {
    for (const auto& [k, t] : inputs.dict()) {
      if (!t.is_tensor() || (k != "query" && k != "value" && k != "key" && k != "attention_mask")) bad();
    }
    if (!inputs.contains("query") || !inputs.contains("value")) bad();
    in.query = inputs["query"].tensor();
    in.value = inputs["value"].tensor();
    if (inputs.contains("key")) in.key = inputs["key"].tensor();
    if (inputs.contains("attention_mask")) in.attention_mask = inputs["attention_mask"].tensor();
  } else {
    bad();
  }
  if (!in.key.defined()) in.key = in.value;
  return in;
}

void MultiHeadAttention::build(const Tree& inputs) {
  const Inputs in = unpack(inputs);
  const Shape &qs = in.query.shape(), &vs = in.value.shape(), &ks = in.key.shape();
  if (qs.rank() < 3 || vs.rank() < 3 || ks.rank() < 3) {
    throw_error<ShapeError>("{}: expected query, value and key of rank >= 3 (batch, ..., features), got query {}, "
                            "value {}, key {}",
                            name(), qs.to_string(), vs.to_string(), ks.to_string());
  }
  if (vs.rank() != ks.rank() || !std::equal(vs.begin() + 1, vs.end() - 1, ks.begin() + 1)) {
    throw_error<ShapeError>("{}: all dimensions of value and key, except the last one, must be equal. Received: "
                            "value_shape={} and key_shape={}",
                            name(), vs.to_string(), ks.to_string());
  }
  if (qs.rank() != vs.rank()) {
    throw_error<ShapeError>("{}: expected query and value of the same rank, got query {} and value {}", name(),
                            qs.to_string(), vs.to_string());
  }
  resolved_axes(qs.rank());  // checks them
  const int r = qs.rank();
  auto sublayer_options = [&](const std::string& sub, const std::string& bias_axes) {
    return EinsumDenseOptions{.bias_axes = options_.use_bias ? bias_axes : "",
                              .kernel_initializer = options_.kernel_initializer,
                              .bias_initializer = options_.bias_initializer,
                              .name = sub};
  };
  std::vector<int64_t> head_shape(static_cast<size_t>(r - 2), -1);
  head_shape.push_back(num_heads_);
  const AttentionProjection in_proj = attention_projection(r - 1, 1, 2);
  std::vector<int64_t> qk_shape = head_shape, v_shape = head_shape;
  qk_shape.push_back(key_dim_);
  v_shape.push_back(value_dim());
  query_ = add<EinsumDense>(in_proj.equation, qk_shape, sublayer_options("query", in_proj.bias_axes));
  query_->build_from(in.query);
  key_ = add<EinsumDense>(in_proj.equation, qk_shape, sublayer_options("key", in_proj.bias_axes));
  key_->build_from(in.key);
  value_ = add<EinsumDense>(in_proj.equation, v_shape, sublayer_options("value", in_proj.bias_axes));
  value_->build_from(in.value);
  dropout_ = add<Dropout>(options_.dropout, DropoutOptions{.seed = options_.seed, .name = "dropout"});
  const std::vector<int64_t> out_dims =
      options_.output_shape.empty() ? std::vector<int64_t>{qs[r - 1]} : options_.output_shape;
  const AttentionProjection out_proj = attention_projection(r - 1, 2, static_cast<int>(out_dims.size()));
  std::vector<int64_t> out_shape(static_cast<size_t>(r - 2), -1);
  out_shape.insert(out_shape.end(), out_dims.begin(), out_dims.end());
  output_ = add<EinsumDense>(out_proj.equation, out_shape, sublayer_options("attention_output", out_proj.bias_axes));
  std::vector<int64_t> heads_out(qs.begin(), qs.end() - 1);
  heads_out.push_back(num_heads_);
  heads_out.push_back(value_dim());
  output_->build_from(Tensor::empty(Shape(heads_out), in.query.dtype() == kBFloat16 ? kBFloat16 : kFloat32));
}

Tree MultiHeadAttention::attend(const Inputs& in, bool training, bool return_scores) {
  const Tensor query = off_graph_attention_input(in.query), value = off_graph_attention_input(in.value),
               key = off_graph_attention_input(in.key);
  const int r = query.rank();
  const std::vector<int> attended = resolved_axes(r);
  AttentionFold fold;
  for (int a = 0; a <= r - 2; ++a) {
    if (!std::binary_search(attended.begin(), attended.end(), a)) fold.batch_axes.push_back(a);
  }
  fold.attended = attended;
  bool same = value.rank() == r && key.rank() == r;
  for (size_t i = 0; same && i < fold.batch_axes.size(); ++i) {
    const int a = fold.batch_axes[i];
    same = value.dim(a) == query.dim(a) && key.dim(a) == query.dim(a);
  }
  if (!same || !std::equal(value.shape().begin() + 1, value.shape().end() - 1, key.shape().begin() + 1)) {
    throw_error<ShapeError>("{}: query {}, value {} and key {} must agree on the batch and every axis not attended "
                            "over, and value and key on all but the last",
                            name(), query.shape().to_string(), value.shape().to_string(), key.shape().to_string());
  }
  // Keras's score shape: (B, <other axes>, N, <attended query axes>, <attended key axes>).
  std::vector<int64_t> scores_shape;
  for (int a : fold.batch_axes) scores_shape.push_back(query.dim(a));
  scores_shape.push_back(num_heads_);
  for (int a : attended) scores_shape.push_back(query.dim(a));
  for (int a : attended) scores_shape.push_back(key.dim(a));

  const Tensor projected_query = (*query_)(query);  // (B, <query axes>, N, Dk)
  const Tensor q = fold.fold(projected_query), k = fold.fold((*key_)(key)), v = fold.fold((*value_)(value));
  ops::AttentionOptions options;
  if (in.attention_mask.defined()) options.mask = fold.fold_mask(in.attention_mask, scores_shape, q, k, name());
  if (training && options_.dropout > 0) {
    options.dropout_mask = dropout_->draw_mask(Shape{q.dim(0), num_heads_, q.dim(1), k.dim(1)});
  }
  ops::AttentionOutputs attention = ops::dot_product_attention(q, k, v, options);
  Tensor output = (*output_)(fold.unfold(attention.output, projected_query));
  if (!return_scores) return output;
  Tensor scores = fold.identity() ? attention.probabilities : ops::reshape(attention.probabilities, scores_shape);
  return Tree::list({output, scores});
}

Tree MultiHeadAttention::call(const Tree& inputs, bool training) { return attend(unpack(inputs), training, false); }

namespace {

// Keras's _compute_causal_mask: (T, S) int32, 1 where row >= column.
Tensor causal_attention_mask(int64_t t, int64_t s) {
  Tensor mask = Tensor::empty({t, s}, kInt32);
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = 0; j < s; ++j) mask.data<int32_t>()[i * s + j] = i >= j ? 1 : 0;
  }
  return mask;
}

}  // namespace

Tree MultiHeadAttention::operator()(const Tensor& query, const Tensor& value, const MultiHeadAttentionCall& args) & {
  Tree inputs = {{"query", query}, {"value", value}};
  if (args.key.defined()) inputs["key"] = args.key;
  if (args.attention_mask.defined()) inputs["attention_mask"] = args.attention_mask;
  if (args.use_causal_mask) {
    if (is_symbolic(inputs)) {
      throw_error<ValueError>("{}: use_causal_mask is not supported on symbolic inputs (the functional API); pass "
                              "the causal attention_mask instead",
                              name());
    }
    if (query.rank() != 3 || value.rank() != 3) {
      throw_error<ShapeError>("{}: use_causal_mask expects query and value of rank 3 (batch, sequence, dim), got {} "
                              "and {}",
                              name(), query.shape().to_string(), value.shape().to_string());
    }
    const Tensor causal = causal_attention_mask(query.dim(1), value.dim(1));
    inputs["attention_mask"] =
        args.attention_mask.defined() ? ops::minimum(ops::cast(ops::cast(args.attention_mask, kBool), kInt32), causal)
                                      : causal;
  }
  if (!args.return_attention_scores) return Layer::operator()(inputs, args.training);
  if (is_symbolic(inputs)) {
    throw_error<ValueError>(
        "{}: return_attention_scores is not supported on symbolic inputs (the functional API); call the layer on "
        "tensors",
        name());
  }
  build_from(inputs);
  return attend(unpack(inputs), args.training, true);
}

nlohmann::json MultiHeadAttention::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["num_heads"] = num_heads_;
  config["key_dim"] = key_dim_;
  config["value_dim"] = value_dim();
  config["dropout"] = options_.dropout;
  config["use_bias"] = options_.use_bias;
  config["output_shape"] =
      options_.output_shape.empty() ? nlohmann::json(nullptr) : nlohmann::json(options_.output_shape);
  config["attention_axes"] =
      options_.attention_axes.empty() ? nlohmann::json(nullptr) : nlohmann::json(options_.attention_axes);
  config["kernel_initializer"] = options_.kernel_initializer.get_config();
  config["bias_initializer"] = options_.bias_initializer.get_config();
  config["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  return config;
}

std::shared_ptr<MultiHeadAttention> MultiHeadAttention::from_config(const nlohmann::json& config) {
  ConfigReader r("MultiHeadAttention", config);
  MultiHeadAttentionOptions options;
  options.value_dim = r.integer("value_dim", 0);
  options.dropout = r.number("dropout", 0.0);
  options.use_bias = r.boolean("use_bias", true);
  if (const nlohmann::json* shape = r.find("output_shape"); shape != nullptr && shape->is_number_integer()) {
    options.output_shape = {shape->get<int64_t>()};  // Keras accepts an int
  } else {
    options.output_shape = r.value<std::vector<int64_t>>("output_shape", {});
  }
  if (const nlohmann::json* axes = r.find("attention_axes"); axes != nullptr && axes->is_number_integer()) {
    options.attention_axes = {r.value<int>("attention_axes", 0)};
  } else {
    options.attention_axes = r.value<std::vector<int>>("attention_axes", {});
  }
  detail::read_initializer(r, "kernel_initializer", options.kernel_initializer);
  detail::read_initializer(r, "bias_initializer", options.bias_initializer);
  options.seed = r.optional<uint64_t>("seed");
  r.accept_inert({"kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint"});
  r.accept_inert({"use_gate"}, false);
  options.name = detail::config_name(r);
  auto layer = std::make_shared<MultiHeadAttention>(r.integer("num_heads", 0), r.integer("key_dim", 0), std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
