// Hashing: hashes strings or integers into a fixed number of bins
// (keras.layers.Hashing). Deterministic across runs, processes and machines: a value's
// text (an integer's decimal digits; a float is first truncated to an integer) is hashed
// with FarmHash's Fingerprint64, or with SipHash-2-4 keyed by `salt` — TensorFlow's
// tf.strings.to_hash_bucket_fast / _strong, so the bins are Keras's (chorus/text/hash.h
// documents both hashes). No state: safe to call from any number of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "chorus/layers/layer.h"
#include "chorus/layers/preprocessing/categorical_encoding.h"
#include "chorus/text/hash.h"

namespace chorus::layers {

struct HashingOptions {
  // Inputs equal to it go to bin 0 and the others hash into bins 1..num_bins-1. A string
  // for string inputs, an integer for numeric ones. None: no mask bin.
  std::optional<std::variant<std::string, int64_t>> mask_value;
  // SipHash's key instead of FarmHash (Keras: a salt of one integer k is {k, k}).
  std::optional<text::SipHashKey> salt;
  // int: the bin indices; one_hot, multi_hot, count: encodings of num_bins entries
  // (tf_idf is not available: hashing has no document frequencies).
  OutputMode output_mode = OutputMode::kInt;
  std::string name;  // empty: "hashing", "hashing_1", ...
};

// Input: a string, int32/int64, float32/bfloat16 or bool tensor of any shape S (or a
// RaggedTensor in Tree form). Output: int64 bins of shape S (ragged stays ragged), or
// float32 encodings: one_hot S + (num_bins,) (S[:-1] + (num_bins,) when the last dim is
// 1), multi_hot/count S[:-1] + (num_bins,), one row per ragged row.
//
//   layers::Hashing hashing(3);
//   hashing(Tensor::from_strings(Shape{5, 1}, {"A", "B", "C", "D", "E"}));  // [[1], [0], [1], [1], [2]]
class Hashing : public Layer {
 public:
  // Throws ValueError unless num_bins > 0, or for output_mode tf_idf.
  explicit Hashing(int64_t num_bins, HashingOptions options = {});

  int64_t num_bins() const { return num_bins_; }

  nlohmann::json get_config() const override;
  static std::shared_ptr<Hashing> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Hashing>(std::move(*this)); }

 protected:
  // Throws ValueError for a mask_value whose kind (string or integer) differs from the
  // inputs'.
  Tree call(const Tree& inputs, bool training) override;

 private:
  // The int64 bin of every element of `x`.
  Tensor hash_to_bins(const Tensor& x) const;

  int64_t num_bins_;
  HashingOptions options_;
};

}  // namespace chorus::layers
