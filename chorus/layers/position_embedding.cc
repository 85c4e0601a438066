#include "chorus/layers/position_embedding.h"

#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {

PositionEmbedding::PositionEmbedding(int64_t sequence_length, PositionEmbeddingOptions options)
    : Layer("PositionEmbedding", options.name), sequence_length_(sequence_length), options_(std::move(options)) {
  if (sequence_length <= 0) {
    throw_error<ValueError>("PositionEmbedding: expected sequence_length > 0. Received: sequence_length={}",
                            sequence_length);
  }
  set_input_spec(InputSpec{.min_ndim = 2});  // (batch..., sequence, feature)
}

void PositionEmbedding::build(const Tree& inputs) {
  const Tensor& x = detail::single_input(inputs, name());
  set_input_spec(InputSpec{.min_ndim = 2, .axes = {{-1, x.dim(-1)}}});
  embeddings_ = add_weight("embeddings", Shape{sequence_length_, x.dim(-1)}, options_.initializer);
}

Tree PositionEmbedding::call(const Tree& inputs, bool /*training*/) {
  const Tensor& x = detail::single_input(inputs, name());  // rank >= 2, the table's width: input_spec()
  const int64_t length = x.dim(-2), features = x.dim(-1);
  if (length > sequence_length_) {
    throw_error<ValueError>("{}: the input's sequence length {} (axis -2 of {}) exceeds sequence_length {}", name(),
                            length, x.shape().to_string(), sequence_length_);
  }
  // table: (sequence_length, F) -> rows (T, F) -> (batch..., T, F)
  return ops::broadcast_to(ops::slice(embeddings_.value(), {0, 0}, {length, features}), x.shape());
}

nlohmann::json PositionEmbedding::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["sequence_length"] = sequence_length_;
  config["initializer"] = options_.initializer.get_config();
  return config;
}

std::shared_ptr<PositionEmbedding> PositionEmbedding::from_config(const nlohmann::json& config) {
  ConfigReader r("PositionEmbedding", config);
  PositionEmbeddingOptions options;
  detail::read_initializer(r, "initializer", options.initializer);
  options.name = detail::config_name(r);
  auto layer = std::make_shared<PositionEmbedding>(r.integer("sequence_length", 0), std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
