// OutputMode and the categorical encodings the lookup and hashing layers share (Keras's
// numerical_utils.encode_categorical_inputs): indices to one-hot, multi-hot, count or
// TF-IDF vectors. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "chorus/core/ragged_tensor.h"
#include "chorus/core/tensor.h"

namespace chorus::layers {

// Keras's output_mode strings: "int", "one_hot", "multi_hot", "count", "tf_idf".
enum class OutputMode { kInt, kOneHot, kMultiHot, kCount, kTfIdf };

// Keras's name of `mode` ("multi_hot").
std::string_view output_mode_name(OutputMode mode);
// The mode named `name`, accepting Keras's deprecated spellings "binary" (multi_hot) and
// "tf-idf". Throws ValueError naming `who` and the accepted names for anything else:
// "StringLookup: unknown output_mode 'dense'; expected one of int, one_hot, multi_hot, count, tf_idf".
OutputMode parse_output_mode(std::string_view name, std::string_view who);

namespace detail {

// Encodes int64 `indices` of shape S into float32 vectors of `depth` entries; an index
// outside [0, depth) (a dropped mask token) adds nothing.
//   kOneHot: one vector per index: S + (depth,), or S[:-1] + (depth,) when rank >= 2 and
//            the last dim is 1 (Keras encodes on that dim).
//   kMultiHot, kCount, kTfIdf: one vector per sample, the last axis being the sample:
//            S[:-1] + (depth,) ((depth,) for a scalar). multi_hot marks presence, count
//            counts, tf_idf multiplies the count of index i by idf[i].
// REQUIRES: mode != kInt; idf.size() == depth for kTfIdf.
Tensor encode_categorical(const Tensor& indices, OutputMode mode, int64_t depth, std::span<const float> idf = {});

// The same for ragged int64 indices (rank-1 values): one sample per row, (nrows, depth);
// kOneHot is not defined on rows and throws ValueError naming `who`.
Tensor encode_categorical_rows(const RaggedTensor& indices, OutputMode mode, int64_t depth,
                               std::span<const float> idf, std::string_view who);

}  // namespace detail
}  // namespace chorus::layers
