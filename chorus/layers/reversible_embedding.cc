#include "chorus/layers/reversible_embedding.h"

#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {

ReversibleEmbedding::ReversibleEmbedding(int64_t input_dim, int64_t output_dim, ReversibleEmbeddingOptions options)
    : Embedding("ReversibleEmbedding", input_dim, output_dim,
                EmbeddingOptions{.embeddings_initializer = options.embeddings_initializer, .name = options.name}),
      tie_weights_(options.tie_weights),
      reverse_initializer_(std::move(options.embeddings_initializer)),
      logit_soft_cap_(options.logit_soft_cap) {
  if (logit_soft_cap_ && !(*logit_soft_cap_ > 0)) {
    throw_error<ValueError>("ReversibleEmbedding: expected logit_soft_cap > 0. Received: logit_soft_cap={}",
                            *logit_soft_cap_);
  }
}

void ReversibleEmbedding::build(const Tree& inputs) {
  Embedding::build(inputs);
  if (!tie_weights_) {
    reverse_embeddings_ = add_weight("reverse_embeddings", Shape{output_dim(), input_dim()}, reverse_initializer_);
  }
}

Tensor ReversibleEmbedding::reverse(const Tensor& hidden) { return reverse(hidden, Tensor()); }

Tensor ReversibleEmbedding::reverse(const Tensor& hidden, const Tensor& bias) {
  if (!built()) build_from(Tree(Tensor::empty(Shape{0}, kInt32)));  // the tables do not depend on inputs
  if (hidden.rank() < 1 || hidden.dim(-1) != output_dim()) {
    throw_error<ShapeError>("{}: reverse expected hidden states with last dim {}, got shape {}", name(), output_dim(),
                            hidden.shape().to_string());
  }
  // hidden: (..., output_dim) -> logits: (..., input_dim)
  // The table in the hidden states' dtype: what a caller under mixed precision reads.
  auto as_hidden = [&](const Tensor& table) {
    return table.dtype() == hidden.dtype() ? table : ops::cast(table, hidden.dtype());
  };
  const Tensor table = tie_weights_ ? as_hidden(embeddings().value()) : as_hidden(reverse_embeddings_.value());
  const ops::MatmulOptions options{.transpose_b = tie_weights_};
  if (bias.defined() && !logit_soft_cap_) return ops::matmul(hidden, table, bias, options);
  Tensor logits = ops::matmul(hidden, table, options);
  if (logit_soft_cap_) logits = ops::tanh(logits / *logit_soft_cap_) * *logit_soft_cap_;
  return bias.defined() ? logits + bias : logits;
}

nlohmann::json ReversibleEmbedding::get_config() const {
  nlohmann::json config = Embedding::get_config();
  config["tie_weights"] = tie_weights_;
  config["reverse_dtype"] = nullptr;
  config["logit_soft_cap"] = logit_soft_cap_ ? nlohmann::json(*logit_soft_cap_) : nlohmann::json(nullptr);
  return config;
}

std::shared_ptr<ReversibleEmbedding> ReversibleEmbedding::from_config(const nlohmann::json& config) {
  ConfigReader r("ReversibleEmbedding", config);
  if (const nlohmann::json* dtype = r.find("reverse_dtype"); dtype != nullptr && !dtype->is_null()) {
    throw_error<ValueError>(
        "ReversibleEmbedding.from_config: reverse_dtype is not supported (logits take the "
        "table's dtype). Received: reverse_dtype={}",
        dtype->dump());
  }
  if (r.boolean("mask_zero", false)) {
    throw_error<ValueError>("ReversibleEmbedding.from_config: mask_zero=true is not supported (no masks)");
  }
  const EmbeddingOptions base = options_from_config(r);
  ReversibleEmbeddingOptions options{.tie_weights = r.boolean("tie_weights", true),
                                     .embeddings_initializer = base.embeddings_initializer,
                                     .name = base.name};
  options.logit_soft_cap = r.optional<double>("logit_soft_cap");
  auto layer = std::make_shared<ReversibleEmbedding>(r.integer("input_dim", 0), r.integer("output_dim", 0),
                                                     std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
