// MaskedLMHead, as KerasHub computes it:
//   x = take_along_axis(inputs, mask_positions)   (B, M, H)
//   x = LayerNorm(Dense_H(x, intermediate_activation))
//   logits = activation(x @ token_table^T + output_bias)
// The gather flattens (B, T) to one axis so it is one take with a scatter-add gradient.
#include "chorus/layers/masked_lm_head.h"

#include "chorus/jit/tracer.h"
#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {

MaskedLMHead::MaskedLMHead(int64_t vocabulary_size, ReversibleEmbedding* token_embedding,
                           MaskedLMHeadOptions options)
    : Layer("MaskedLMHead", options.name),
      vocabulary_size_(vocabulary_size),
      token_embedding_(token_embedding),
      options_(std::move(options)) {
  if (vocabulary_size <= 0) {
    throw_error<ValueError>("{}: expected vocabulary_size > 0. Received: vocabulary_size={}", name(),
                            vocabulary_size);
  }
  if (token_embedding == nullptr) {
    throw_error<ValueError>("{}: expected a token_embedding to tie the output projection to, got none", name());
  }
  if (token_embedding->input_dim() != vocabulary_size) {
    throw_error<ValueError>("{}: vocabulary_size={} does not match the token_embedding '{}' of input_dim {}", name(),
                            vocabulary_size, token_embedding->name(), token_embedding->input_dim());
  }
}

Tensor MaskedLMHead::operator()(const Tensor& inputs, const Tensor& mask_positions) & {
  return Layer::operator()(Tree{{"inputs", inputs}, {"mask_positions", mask_positions}}).tensor();
}

namespace {

struct MaskedLMHeadInputs {
  Tensor x, positions;
};

MaskedLMHeadInputs unpack_head_inputs(const std::string& layer, const Tree& inputs) {
  if (!inputs.is_dict() || !inputs.contains("inputs") || !inputs.contains("mask_positions") ||
      !inputs["inputs"].is_tensor() || !inputs["mask_positions"].is_tensor()) {
    throw_error<ValueError>("{}: expected {{\"inputs\": (batch, sequence, hidden), \"mask_positions\": (batch, "
                            "masks)}}, got {}",
                            layer, inputs.empty() ? std::string("nothing") : inputs.to_string());
  }
  MaskedLMHeadInputs in{inputs["inputs"].tensor(), inputs["mask_positions"].tensor()};
  const Shape& s = in.x.shape();
  const Shape& p = in.positions.shape();
  if (s.rank() != 3 || p.rank() != 2 || p[0] != s[0]) {
    throw_error<ShapeError>("{}: expected inputs (batch, sequence, hidden) and mask_positions (batch, masks) with "
                            "the same batch, got {} and {}",
                            layer, s.to_string(), p.to_string());
  }
  if (!is_integer(in.positions.dtype())) {
    throw_error<DTypeError>("{}: expected integer mask_positions, got {}", layer, dtype_name(in.positions.dtype()));
  }
  return in;
}

// Row indices into inputs reshaped to (B * T, H): b * T + mask_positions[b, m]. A kernel
// of its own, so that a compiled step computes (and checks) them at every run.
Tensor flat_rows(const std::string& layer, const Tensor& positions, int64_t sequence) {
  const Tensor p = ops::cast(positions, kInt64);
  Tensor rows = Tensor::empty({p.dim(0) * p.dim(1)}, kInt32);
  jit::launch("mask_rows", {p}, {rows}, [layer, sequence](auto in, auto out) {
    const int64_t batch = in[0].dim(0), masks = in[0].dim(1);
    const int64_t* src = in[0].template data<int64_t>();
    int32_t* dst = out[0].template data<int32_t>();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t m = 0; m < masks; ++m) {
        const int64_t pos = src[b * masks + m];
        if (pos < 0 || pos >= sequence) {
          throw_error<IndexError>("{}: mask_positions[{}, {}] = {} is outside the sequence [0, {})", layer, b, m, pos,
                                  sequence);
        }
        dst[b * masks + m] = static_cast<int32_t>(b * sequence + pos);
      }
    }
  });
  return rows;
}

}  // namespace

void MaskedLMHead::build(const Tree& inputs) {
  const MaskedLMHeadInputs in = unpack_head_inputs(name(), inputs);
  const int64_t hidden = in.x.dim(2);
  if (hidden != token_embedding_->output_dim()) {
    throw_error<ShapeError>("{}: the hidden size {} of inputs {} differs from the token_embedding's output_dim {}",
                            name(), hidden, in.x.shape().to_string(), token_embedding_->output_dim());
  }
  intermediate_ = add<Dense>(hidden, DenseOptions{.activation = options_.intermediate_activation,
                                                  .kernel_initializer = options_.kernel_initializer,
                                                  .bias_initializer = options_.bias_initializer,
                                                  .name = "intermediate_dense"});
  const Tensor rows = Tensor::empty({0, hidden}, in.x.dtype());
  intermediate_->build_from(rows);
  layer_norm_ = add<LayerNormalization>(
      LayerNormalizationOptions{.epsilon = options_.layer_norm_epsilon, .name = "intermediate_layer_norm"});
  layer_norm_->build_from(rows);
  output_bias_ = add_weight("output_bias", Shape{vocabulary_size_}, options_.bias_initializer);
}

Tree MaskedLMHead::call(const Tree& inputs, bool /*training*/) {
  const MaskedLMHeadInputs in = unpack_head_inputs(name(), inputs);
  const int64_t batch = in.x.dim(0), sequence = in.x.dim(1);
  const int64_t masks = in.positions.dim(1);
  return ops::reshape(logits_for_rows(in.x, flat_rows(name(), in.positions, sequence)),
                      {batch, masks, vocabulary_size_});
}

Tensor MaskedLMHead::logits_for_rows(const Tensor& inputs, const Tensor& rows) {
  std::optional<autograd::AutocastScope> policy;  // BertMaskedLM's training step calls this directly
  enter_dtype_policy(policy);
  const Tensor flat = ops::reshape(inputs, {inputs.dim(0) * inputs.dim(1), inputs.dim(2)});
  const Tensor x = (*layer_norm_)((*intermediate_)(ops::take(flat, rows, 0)));
  return options_.activation(token_embedding_->reverse(x, output_bias_.value()));
}

nlohmann::json MaskedLMHead::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["vocabulary_size"] = vocabulary_size_;
  config["intermediate_activation"] = options_.intermediate_activation.get_config();
  config["activation"] = options_.activation.get_config();
  config["layer_norm_epsilon"] = options_.layer_norm_epsilon;
  config["kernel_initializer"] = options_.kernel_initializer.get_config();
  config["bias_initializer"] = options_.bias_initializer.get_config();
  return config;
}

}  // namespace chorus::layers
