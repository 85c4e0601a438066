// TransformerEncoder, as KerasHub computes it (post-norm shown; normalize_first moves
// each LayerNormalization to the start of its block, and the residual skips it):
//   x = LN_a(x + Dropout(MHA(x, x, mask)))
//   x = LN_f(x + Dropout(Dense_out(Dense_mid(x))))
// The mask merges padding_mask (B, T) -> (B, 1, T) with attention_mask (B, T, T) by
// minimum, both as int32 (KerasHub's merge_padding_and_attention_mask).
#include "chorus/layers/transformer_encoder.h"

#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {
namespace {

// A handle on `t` outside any functional graph (see multi_head_attention.cc).
Tensor off_graph_encoder_input(const Tensor& t) { return t.defined() && is_symbolic(t) ? t.view(t.shape()) : t; }

}  // namespace

TransformerEncoder::TransformerEncoder(int64_t intermediate_dim, int64_t num_heads, TransformerEncoderOptions options)
    : Layer("TransformerEncoder", options.name),
      intermediate_dim_(intermediate_dim),
      num_heads_(num_heads),
      options_(std::move(options)) {
  if (intermediate_dim <= 0) {
    throw_error<ValueError>("TransformerEncoder: expected intermediate_dim > 0. Received: intermediate_dim={}",
                            intermediate_dim);
  }
  if (num_heads <= 0) {
    throw_error<ValueError>("TransformerEncoder: expected num_heads > 0. Received: num_heads={}", num_heads);
  }
  if (!(options_.dropout >= 0 && options_.dropout <= 1)) {
    throw_error<ValueError>("TransformerEncoder: expected dropout in [0, 1]. Received: dropout={}", options_.dropout);
  }
  if (!(options_.layer_norm_epsilon >= 0)) {
    throw_error<ValueError>("TransformerEncoder: expected layer_norm_epsilon >= 0. Received: layer_norm_epsilon={}",
                            options_.layer_norm_epsilon);
  }
}

TransformerEncoder::Inputs TransformerEncoder::unpack(const Tree& inputs) const {
  Inputs in;
  if (inputs.is_tensor()) {
    in.x = inputs.tensor();
    return in;
  }
  bool ok = inputs.is_dict() && inputs.contains("inputs");
  for (const auto& [k, t] : ok ? inputs.dict() : Tree::Dict{}) {
    ok = ok && t.is_tensor() && (k == "inputs" || k == "padding_mask" || k == "attention_mask");
  }
  if (!ok) {
    throw_error<ValueError>(
        "{}: expected a tensor, or a dict with 'inputs' and optionally 'padding_mask' and 'attention_mask'; got {}",
        name(), inputs.empty() ? std::string("nothing") : inputs.to_string());
  }
  in.x = inputs["inputs"].tensor();
  if (inputs.contains("padding_mask")) in.padding_mask = inputs["padding_mask"].tensor();
  if (inputs.contains("attention_mask")) in.attention_mask = inputs["attention_mask"].tensor();
  return in;
}

void TransformerEncoder::build(const Tree& inputs) {
  const Tensor x = unpack(inputs).x;
  if (x.rank() != 3) {
    throw_error<ShapeError>("{}: expected inputs of shape (batch, sequence, hidden_dim), got {}", name(),
                            x.shape().to_string());
  }
  const int64_t hidden = x.dim(2);
  if (hidden < num_heads_) {
    throw_error<ValueError>("{}: attention key_dim computed cannot be zero: the hidden_dim {} of inputs {} has to be "
                            "equal to or greater than num_heads={}",
                            name(), hidden, x.shape().to_string(), num_heads_);
  }
  if (hidden % num_heads_ != 0) {
    throw_error<ValueError>("{}: num_heads={} does not divide the hidden_dim {} of inputs {}: key_dim = hidden_dim / "
                            "num_heads must be a whole number",
                            name(), num_heads_, hidden, x.shape().to_string());
  }
  attention_ = add<MultiHeadAttention>(num_heads_, hidden / num_heads_,
                                       MultiHeadAttentionOptions{.dropout = options_.dropout,
                                                                 .kernel_initializer = options_.kernel_initializer,
                                                                 .bias_initializer = options_.bias_initializer,
                                                                 .name = "self_attention_layer"});
  attention_->build_from(Tree::list({x, x}));
  auto norm_options = [&](const char* sub) {
    return LayerNormalizationOptions{.epsilon = options_.layer_norm_epsilon, .name = sub};
  };
  attention_norm_ = add<LayerNormalization>(norm_options("self_attention_layer_norm"));
  attention_norm_->build_from(x);
  attention_dropout_ = add<Dropout>(options_.dropout, DropoutOptions{.name = "self_attention_dropout"});
  feedforward_norm_ = add<LayerNormalization>(norm_options("feedforward_layer_norm"));
  feedforward_norm_->build_from(x);
  auto dense_options = [&](activations::Activation activation, const char* sub) {
    return DenseOptions{.activation = std::move(activation),
                        .kernel_initializer = options_.kernel_initializer,
                        .bias_initializer = options_.bias_initializer,
                        .name = sub};
  };
  intermediate_ =
      add<Dense>(intermediate_dim_, dense_options(options_.activation, "feedforward_intermediate_dense"));
  intermediate_->build_from(x);
  output_ = add<Dense>(hidden, dense_options({}, "feedforward_output_dense"));
  output_->build_from(Tensor::empty({x.dim(0), x.dim(1), intermediate_dim_}, x.dtype()));
  feedforward_dropout_ = add<Dropout>(options_.dropout, DropoutOptions{.name = "feedforward_dropout"});
}

Tensor TransformerEncoder::merged_mask(const Inputs& in) const {
  const Shape& s = in.x.shape();
  Tensor mask;
  if (in.padding_mask.defined()) {
    const Tensor& p = in.padding_mask;
    if (p.rank() != 2 || p.dim(0) != s[0] || p.dim(1) != s[1]) {
      throw_error<ShapeError>("{}: expected padding_mask of shape (batch, sequence) = ({}, {}) for inputs {}, got {}",
                              name(), s[0], s[1], s.to_string(), p.shape().to_string());
    }
    mask = ops::expand_dims(ops::cast(off_graph_encoder_input(p), kInt32), 1);  // (B, 1, T)
  }
  if (in.attention_mask.defined()) {
    const Tensor& a = in.attention_mask;
    if (a.rank() != 3 || a.dim(0) != s[0] || a.dim(1) != s[1] || a.dim(2) != s[1]) {
      throw_error<ShapeError>(
          "{}: expected attention_mask of shape (batch, sequence, sequence) = ({}, {}, {}) for inputs {}, got {}",
          name(), s[0], s[1], s[1], s.to_string(), a.shape().to_string());
    }
    const Tensor am = ops::cast(off_graph_encoder_input(a), kInt32);
    mask = mask.defined() ? ops::minimum(mask, am) : am;
  }
  return mask;
}

Tree TransformerEncoder::encode(const Inputs& in, bool training, bool return_scores) {
  const Tensor input = off_graph_encoder_input(in.x);
  if (input.rank() != 3 || input.dim(2) != output_->units()) {
    throw_error<ShapeError>("{}: expected inputs of shape (batch, sequence, {}), got {}", name(), output_->units(),
                            input.shape().to_string());
  }
  const Tensor mask = merged_mask(in);
  const bool first = options_.normalize_first;
  // Self-attention block.
  Tensor x = first ? (*attention_norm_)(input) : input;
  const MultiHeadAttentionCall args{
      .attention_mask = mask, .return_attention_scores = return_scores, .training = training};
  Tree attended = (*attention_)(x, x, args);
  x = return_scores ? attended[0].tensor() : attended.tensor();
  x = (*attention_dropout_)(x, training) + input;
  if (!first) x = (*attention_norm_)(x);
  // Feedforward block.
  const Tensor residual = x;
  if (first) x = (*feedforward_norm_)(x);
  x = (*output_)((*intermediate_)(x));
  x = (*feedforward_dropout_)(x, training) + residual;
  if (!first) x = (*feedforward_norm_)(x);
  if (!return_scores) return x;
  return Tree::list({x, attended[1]});
}

Tree TransformerEncoder::call(const Tree& inputs, bool training) { return encode(unpack(inputs), training, false); }

Tree TransformerEncoder::operator()(const Tensor& inputs, const TransformerEncoderCall& args) & {
  Tree tree = {{"inputs", inputs}};
  if (args.padding_mask.defined()) tree["padding_mask"] = args.padding_mask;
  if (args.attention_mask.defined()) tree["attention_mask"] = args.attention_mask;
  if (!args.return_attention_scores) return Layer::operator()(tree, args.training);
  if (is_symbolic(tree)) {
    throw_error<ValueError>(
        "{}: return_attention_scores is not supported on symbolic inputs (the functional API); call the layer on "
        "tensors",
        name());
  }
  build_from(tree);
  return encode(unpack(tree), args.training, true);
}

nlohmann::json TransformerEncoder::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["intermediate_dim"] = intermediate_dim_;
  config["num_heads"] = num_heads_;
  config["dropout"] = options_.dropout;
  config["activation"] = options_.activation.get_config();
  config["layer_norm_epsilon"] = options_.layer_norm_epsilon;
  config["kernel_initializer"] = options_.kernel_initializer.get_config();
  config["bias_initializer"] = options_.bias_initializer.get_config();
  config["normalize_first"] = options_.normalize_first;
  return config;
}

std::shared_ptr<TransformerEncoder> TransformerEncoder::from_config(const nlohmann::json& config) {
  ConfigReader r("TransformerEncoder", config);
  TransformerEncoderOptions options;
  options.dropout = r.number("dropout", 0.0);
  if (const nlohmann::json* activation = r.find("activation")) {
    options.activation = activations::Activation::from_config(*activation);
  }
  options.layer_norm_epsilon = r.number("layer_norm_epsilon", 1e-5);
  detail::read_initializer(r, "kernel_initializer", options.kernel_initializer);
  detail::read_initializer(r, "bias_initializer", options.bias_initializer);
  options.normalize_first = r.boolean("normalize_first", false);
  options.name = detail::config_name(r);
  auto layer = std::make_shared<TransformerEncoder>(r.integer("intermediate_dim", 0), r.integer("num_heads", 0),
                                                    std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
