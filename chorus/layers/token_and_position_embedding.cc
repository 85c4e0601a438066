#include "chorus/layers/token_and_position_embedding.h"

#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {
namespace {

// Throws ValueError naming `what` unless value > 0 (before any sublayer is made, so the
// message names TokenAndPositionEmbedding's own argument).
int64_t positive_token_and_position_arg(int64_t value, const char* what) {
  if (value <= 0) {
    throw_error<ValueError>("TokenAndPositionEmbedding: expected {} > 0. Received: {}={}", what, what, value);
  }
  return value;
}

}  // namespace

TokenAndPositionEmbedding::TokenAndPositionEmbedding(int64_t vocabulary_size, int64_t sequence_length,
                                                     int64_t embedding_dim, TokenAndPositionEmbeddingOptions options)
    : Layer("TokenAndPositionEmbedding", options.name),
      vocabulary_size_(positive_token_and_position_arg(vocabulary_size, "vocabulary_size")),
      sequence_length_(positive_token_and_position_arg(sequence_length, "sequence_length")),
      embedding_dim_(positive_token_and_position_arg(embedding_dim, "embedding_dim")),
      options_(std::move(options)) {
  token_embedding_ = add<ReversibleEmbedding>(vocabulary_size_, embedding_dim_,
                                              ReversibleEmbeddingOptions{
                                                  .tie_weights = options_.tie_weights,
                                                  .embeddings_initializer = options_.embeddings_initializer,
                                                  .name = name() + "/token_embedding",
                                              });
  position_embedding_ = add<PositionEmbedding>(
      sequence_length_,
      PositionEmbeddingOptions{.initializer = options_.embeddings_initializer, .name = name() + "/position_embedding"});
  set_input_spec(InputSpec{.min_ndim = 1});  // (batch..., sequence)
}

void TokenAndPositionEmbedding::build(const Tree& inputs) {
  const Tensor& ids = detail::single_input(inputs, name());  // rank >= 1: input_spec()
  token_embedding_->build_from(inputs);
  // The position table reads the token embeddings' shape: ids' shape + (embedding_dim,).
  std::vector<int64_t> dims = ids.shape().to_vector();
  dims[0] = 0;
  dims.push_back(embedding_dim_);
  position_embedding_->build_from(Tree(Tensor::empty(Shape(dims), kFloat32)));
}

Tree TokenAndPositionEmbedding::call(const Tree& inputs, bool training) {
  const Tensor& ids = detail::single_input(inputs, name());
  // ids: (batch..., T) -> tokens, positions: (batch..., T, embedding_dim)
  const Tensor tokens = (*token_embedding_)(ids, training);
  const Tensor positions = (*position_embedding_)(tokens, training);
  return tokens + positions;
}

nlohmann::json TokenAndPositionEmbedding::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["vocabulary_size"] = vocabulary_size_;
  config["sequence_length"] = sequence_length_;
  config["embedding_dim"] = embedding_dim_;
  config["embeddings_initializer"] = options_.embeddings_initializer.get_config();
  config["tie_weights"] = options_.tie_weights;
  config["mask_zero"] = false;
  return config;
}

std::shared_ptr<TokenAndPositionEmbedding> TokenAndPositionEmbedding::from_config(const nlohmann::json& config) {
  ConfigReader r("TokenAndPositionEmbedding", config);
  if (r.boolean("mask_zero", false)) {
    throw_error<ValueError>("TokenAndPositionEmbedding.from_config: mask_zero=true is not supported (no masks)");
  }
  TokenAndPositionEmbeddingOptions options{.tie_weights = r.boolean("tie_weights", true),
                                           .name = detail::config_name(r)};
  detail::read_initializer(r, "embeddings_initializer", options.embeddings_initializer);
  auto layer = std::make_shared<TokenAndPositionEmbedding>(
      r.integer("vocabulary_size", 0), r.integer("sequence_length", 0), r.integer("embedding_dim", 0), std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
