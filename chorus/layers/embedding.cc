#include "chorus/layers/embedding.h"

#include "chorus/backend/cpu/gather_kernels.h"
#include "chorus/jit/tracer.h"
#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {
namespace {

// Throws IndexError for the first index outside [0, input_dim), with its batch element.
template <class T>
void check_indices(const Tensor& indices, int64_t input_dim, const std::string& layer) {
  const T* data = indices.data<T>();
  const int64_t n = indices.numel();
  const int64_t i = backend::cpu::find_out_of_range(data, n, input_dim);  // vectorised scan
  if (i < 0) return;
  const int64_t per_element = indices.rank() == 0 || indices.dim(0) == 0 ? 1 : n / indices.dim(0);
  throw_error<IndexError>("{}: index {} out of range [0, {}) in batch element {}", layer, static_cast<int64_t>(data[i]),
                          input_dim, i / per_element);
}

}  // namespace

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Embedding("Embedding", input_dim, output_dim, std::move(options)) {}

Embedding::Embedding(std::string keras_class, int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Layer(std::move(keras_class), options.name),
      input_dim_(input_dim),
      output_dim_(output_dim),
      options_(std::move(options)) {
  set_autocast(false);  // call() casts the rows it gathers, not the whole table
  if (input_dim <= 0) {
    throw_error<ValueError>("{}: expected input_dim > 0. Received: input_dim={}", class_name(), input_dim);
  }
  if (output_dim <= 0) {
    throw_error<ValueError>("{}: expected output_dim > 0. Received: output_dim={}", class_name(), output_dim);
  }
}

void Embedding::build(const Tree& /*inputs*/) {
  embeddings_ = add_weight("embeddings", Shape{input_dim_, output_dim_}, options_.embeddings_initializer);
  embeddings_.set_sparse_gradients(true);
}

Tree Embedding::call(const Tree& inputs, bool /*training*/) {
  Tensor indices = detail::single_input(inputs, name());
  if (!is_integer(indices.dtype())) indices = ops::cast(indices, kInt32);
  // A node of its own in a compiled step, so that every run checks its batch.
  jit::launch_host("embedding_check", std::span(&indices, 1), {},
                   [input_dim = input_dim_, layer = name()](auto in, auto) {
                     if (in[0].dtype() == kInt32) {
                       check_indices<int32_t>(in[0], input_dim, layer);
                     } else {
                       check_indices<int64_t>(in[0], input_dim, layer);
                     }
                   });
  // indices: S -> (S..., output_dim)
  const Tensor rows = ops::take(embeddings_.value(), indices, 0);
  return rows.dtype() == compute_dtype() ? rows : ops::cast(rows, compute_dtype());
}

nlohmann::json Embedding::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["input_dim"] = input_dim_;
  config["output_dim"] = output_dim_;
  config["embeddings_initializer"] = options_.embeddings_initializer.get_config();
  return config;
}

EmbeddingOptions Embedding::options_from_config(ConfigReader& config) {
  EmbeddingOptions options;
  detail::read_initializer(config, "embeddings_initializer", options.embeddings_initializer);
  config.accept_inert({"embeddings_regularizer", "embeddings_constraint", "lora_rank"});
  options.name = detail::config_name(config);
  return options;
}

std::shared_ptr<Embedding> Embedding::from_config(const nlohmann::json& config) {
  ConfigReader r("Embedding", config);
  EmbeddingOptions options = options_from_config(r);
  r.accept_inert({"mask_zero"}, false);
  auto layer = std::make_shared<Embedding>(r.integer("input_dim", 0), r.integer("output_dim", 0), std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
