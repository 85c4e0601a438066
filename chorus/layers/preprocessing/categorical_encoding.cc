#include "chorus/layers/preprocessing/categorical_encoding.h"

#include <array>
#include <cassert>
#include <utility>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"

namespace chorus::layers {
namespace {

constexpr std::array<std::pair<OutputMode, std::string_view>, 5> kModeNames = {{
    {OutputMode::kInt, "int"},
    {OutputMode::kOneHot, "one_hot"},
    {OutputMode::kMultiHot, "multi_hot"},
    {OutputMode::kCount, "count"},
    {OutputMode::kTfIdf, "tf_idf"},
}};

// Adds sample `values` (indices) into `out` (depth floats) as `mode` says.
void encode_sample(std::span<const int64_t> values, OutputMode mode, int64_t depth, std::span<const float> idf,
                   float* out) {
  for (int64_t index : values) {
    if (index < 0 || index >= depth) continue;
    if (mode == OutputMode::kMultiHot) {
      out[index] = 1;
    } else if (mode == OutputMode::kTfIdf) {
      out[index] += idf[static_cast<size_t>(index)];
    } else {
      out[index] += 1;
    }
  }
}

}  // namespace

std::string_view output_mode_name(OutputMode mode) {
  for (const auto& [m, name] : kModeNames) {
    if (m == mode) return name;
  }
  return "?";
}

OutputMode parse_output_mode(std::string_view name, std::string_view who) {
  if (name == "binary") return OutputMode::kMultiHot;
  if (name == "tf-idf") return OutputMode::kTfIdf;
  for (const auto& [mode, mode_name] : kModeNames) {
    if (mode_name == name) return mode;
  }
  throw_error<ValueError>("{}: unknown output_mode '{}'; expected one of int, one_hot, multi_hot, count, tf_idf", who,
                          name);
}

namespace detail {

Tensor encode_categorical(const Tensor& indices, OutputMode mode, int64_t depth, std::span<const float> idf) {
  assert(mode != OutputMode::kInt && indices.dtype() == kInt64);
  const Shape& in = indices.shape();
  const int64_t* values = indices.data<int64_t>();
  if (mode == OutputMode::kOneHot) {
    // S + (depth,), or S[:-1] + (depth,) for a trailing dim of 1.
    std::vector<int64_t> dims = in.to_vector();
    if (dims.size() >= 2 && dims.back() == 1) dims.pop_back();
    dims.push_back(depth);
    Tensor out = zeros(Shape(dims));
    float* o = out.data<float>();
    for (int64_t i = 0; i < indices.numel(); ++i) {
      if (values[i] >= 0 && values[i] < depth) o[i * depth + values[i]] = 1;
    }
    return out;
  }
  // One sample per last-axis vector: (outer, inner) -> (outer, depth).
  std::vector<int64_t> dims = in.to_vector();
  const int64_t inner = dims.empty() ? 1 : dims.back();
  // The last axis becomes depth in place (GCC 12 misreads a pop_back then push_back).
  if (dims.empty()) {
    dims.push_back(depth);
  } else {
    dims.back() = depth;
  }
  Tensor out = zeros(Shape(dims));
  float* o = out.data<float>();
  const int64_t samples = inner > 0 ? indices.numel() / inner : 0;  // an empty sample encodes to zeros
  for (int64_t s = 0; s < samples; ++s) {
    encode_sample({values + s * inner, static_cast<size_t>(inner)}, mode, depth, idf, o + s * depth);
  }
  return out;
}

Tensor encode_categorical_rows(const RaggedTensor& indices, OutputMode mode, int64_t depth,
                               std::span<const float> idf, std::string_view who) {
  if (mode == OutputMode::kOneHot) {
    throw_error<ValueError>("{}: output_mode one_hot encodes single tokens, not rows of tokens; use multi_hot, "
                            "count or tf_idf",
                            who);
  }
  const Tensor& values = indices.values();
  if (values.rank() != 1) {
    throw_error<ShapeError>("{}: expected ragged rows of single tokens (rank-1 values), got values of shape {}", who,
                            values.shape().to_string());
  }
  const auto splits = indices.row_splits().to_vector<int64_t>();
  const int64_t rows = indices.nrows();
  Tensor out = zeros(Shape{rows, depth});
  float* o = out.data<float>();
  const int64_t* v = values.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    encode_sample({v + splits[r], static_cast<size_t>(splits[r + 1] - splits[r])}, mode, depth, idf, o + r * depth);
  }
  return out;
}

}  // namespace detail
}  // namespace chorus::layers
