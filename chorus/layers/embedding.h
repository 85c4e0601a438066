// Embedding: turns integer indices into dense vectors (keras.layers.Embedding): row i of
// the (input_dim, output_dim) "embeddings" table for index i. Owns the table; safe to
// call from several threads once built.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/layer.h"

namespace chorus {
class ConfigReader;
}  // namespace chorus

namespace chorus::layers {

struct EmbeddingOptions {
  // Keras's "uniform": RandomUniform(-0.05, 0.05).
  Initializer embeddings_initializer = "uniform";
  std::string name;  // empty: "embedding", "embedding_1", ...
};

// Input: int32 or int64 indices of any shape S, each in [0, input_dim) (other dtypes are
// cast to int32, as Keras does). Output: S + (output_dim,) of the table's dtype. The
// table's gradient is the output gradient's rows added at the looked-up indices: dense
// from GradientTape::gradient, or IndexedSlices (the rows alone) where the caller asks for
// sparse gradients, as Model::train_step does on one device.
//
//   layers::Embedding users(943 + 1, 32);
//   Tensor u = users(user_ids);  // (1000,) int64 -> (1000, 32)
class Embedding : public Layer {
 public:
  // Throws ValueError unless input_dim > 0 and output_dim > 0.
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});

  int64_t input_dim() const { return input_dim_; }
  int64_t output_dim() const { return output_dim_; }
  // The (input_dim, output_dim) table; undefined before build (the first call).
  const Variable& embeddings() const { return embeddings_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<Embedding> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Embedding>(std::move(*this)); }

 protected:
  // For subclasses (ReversibleEmbedding): `class_name` is the subclass's Keras name, which
  // also names the errors and the automatic name ("reversible_embedding").
  Embedding(std::string class_name, int64_t input_dim, int64_t output_dim, EmbeddingOptions options);
  // The options from_config reads from an Embedding config (initializer, name), and the
  // Keras keys of features chorus lacks, accepted unset (regularizer, mask_zero, ...).
  static EmbeddingOptions options_from_config(ConfigReader& config);

  void build(const Tree& inputs) override;
  // Throws IndexError for an index outside [0, input_dim), naming it and the batch
  // element (first-axis position) that holds it:
  // "embedding: index 2000 out of range [0, 1683) in batch element 17".
  Tree call(const Tree& inputs, bool training) override;

 private:
  int64_t input_dim_;
  int64_t output_dim_;
  EmbeddingOptions options_;
  Variable embeddings_;
};

}  // namespace chorus::layers
