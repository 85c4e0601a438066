#include "chorus/recsys/brute_force_retrieval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/error.h"
#include "chorus/layers/layer_util.h"
#include "chorus/ops/matmul.h"

namespace chorus::recsys {
namespace {

// Query rows per parallel chunk: a row of 1,683 scores takes about 1-2 us.
constexpr int64_t kRowGrain = 8;

struct Scored {
  float score;
  int32_t index;
};

// Whether `a` ranks before `b`: a higher score first, NaN above every number, and the
// lower index first among equals (so the result never depends on the scan order). A
// function object, so the standard algorithms inline it.
struct RanksBefore {
  bool operator()(const Scored& a, const Scored& b) const {
    const bool a_nan = std::isnan(a.score), b_nan = std::isnan(b.score);
    if (a_nan != b_nan) return a_nan;
    if (!a_nan && a.score != b.score) return a.score > b.score;
    return a.index < b.index;
  }
};

constexpr int64_t kChunk = 16;

// Four floats as one SSE register (the GCC/Clang vector extension; every x86-64 has SSE):
// the chunk test and the group maxima run as packed operations. Left to itself the
// compiler keeps these loops scalar once they are inlined into the selection.
using Float4 = float __attribute__((vector_size(16)));
using Int4 = int32_t __attribute__((vector_size(16)));

inline Float4 load4(const float* p) {
  Float4 x;
  std::memcpy(&x, p, sizeof x);
  return x;
}

// Whether all kChunk scores at p are below t (a NaN is not).
inline bool all_below(const float* p, float t) {
  Int4 below = {-1, -1, -1, -1};
  for (int64_t c = 0; c < kChunk; c += 4) below &= load4(p + c) < t;
  return (below[0] & below[1] & below[2] & below[3]) != 0;
}
inline bool all_below(const bfloat16* p, float t) {
  for (int64_t j = 0; j < kChunk; ++j) {
    if (!(static_cast<float>(p[j]) < t)) return false;
  }
  return true;
}

// The largest number in p[0, n), NaNs ignored (-inf if there is none).
inline float max_ignoring_nan(const float* p, int64_t n) {
  constexpr float kLowest = -std::numeric_limits<float>::infinity();
  Float4 m = {kLowest, kLowest, kLowest, kLowest};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const Float4 x = load4(p + i);
    m = x > m ? x : m;  // a NaN x keeps m
  }
  float out = std::max({m[0], m[1], m[2], m[3]});
  for (; i < n; ++i) out = p[i] > out ? p[i] : out;
  return out;
}
inline float max_ignoring_nan(const bfloat16* p, int64_t n) {
  float out = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) out = static_cast<float>(p[i]) > out ? static_cast<float>(p[i]) : out;
  return out;
}

// A score that the k-th best of row[0, n) is not below (or is a NaN): the smallest of the
// maxima of k groups of the row, since those k scores all rank at least that high. A
// score below it can never be in the top k. REQUIRES: 1 <= k <= n.
template <class T>
float kth_best_lower_bound(const T* row, int64_t n, int64_t k) {
  float bound = std::numeric_limits<float>::infinity();
  for (int64_t g = 0; g < k; ++g) {
    const int64_t begin = n * g / k, end = n * (g + 1) / k;
    bound = std::min(bound, max_ignoring_nan(row + begin, end - begin));
  }
  return bound;
}

// The k best of row[0, n) into (out_scores, out_index), best first. First a bound that
// the k-th best reaches (kth_best_lower_bound); then one scan appends the scores not
// below it (on random scores about 2% of them) to `buffer`, skipping whole chunks after a
// packed comparison, and cuts the buffer back to its k best (raising the bound) whenever
// it fills up; finally the survivors are sorted. REQUIRES: 1 <= k <= n.
template <class T>
void select_top_k(const T* row, int64_t n, int64_t k, std::vector<Scored>& buffer, T* out_scores, int32_t* out_index) {
  const auto keep = static_cast<size_t>(k);
  const size_t capacity = std::max<size_t>(4 * keep, 64);
  const RanksBefore ranks_before;
  auto cut_to_k = [&] {
    std::nth_element(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(keep - 1), buffer.end(), ranks_before);
    buffer.resize(keep);
    return buffer[keep - 1].score;
  };
  float threshold = kth_best_lower_bound(row, n, k);
  buffer.clear();
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t end = std::min(n, begin + kChunk);
    if (end - begin == kChunk && all_below(row + begin, threshold)) continue;
    for (int64_t j = begin; j < end; ++j) {
      const auto score = static_cast<float>(row[j]);
      if (score < threshold) continue;
      buffer.push_back({score, static_cast<int32_t>(j)});
      if (buffer.size() == capacity) threshold = cut_to_k();
    }
  }
  if (buffer.size() > keep) cut_to_k();  // the bound guarantees at least k survivors
  std::sort(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(keep), ranks_before);
  for (size_t j = 0; j < keep; ++j) {
    if (out_scores != nullptr) out_scores[j] = static_cast<T>(buffer[j].score);
    out_index[j] = buffer[j].index;
  }
}

// Row-wise top k of the (rows, n) block `scores` into rows [row0, row0 + rows) of the outputs.
template <class T>
void select_block(const Tensor& scores, int64_t k, int64_t row0, T* out_scores, int32_t* out_index) {
  const int64_t rows = scores.dim(0), n = scores.dim(1);
  const T* data = scores.data<T>();
  backend::cpu::parallel_for(rows, kRowGrain, [&](int64_t begin, int64_t end) {
    std::vector<Scored> buffer;
    buffer.reserve(static_cast<size_t>(std::max<int64_t>(4 * k, 64)));
    for (int64_t r = begin; r < end; ++r) {
      const int64_t out = (row0 + r) * k;
      select_top_k(data + r * n, n, k, buffer, out_scores == nullptr ? nullptr : out_scores + out, out_index + out);
    }
  });
}

// `ids` (any integer dtype, rank 1) as a fresh int32 tensor. Throws ValueError for a value
// outside int32.
Tensor ids_as_int32(const Tensor& ids, const std::string& layer) {
  Tensor out = Tensor::empty(ids.shape(), kInt32);
  int32_t* dst = out.data<int32_t>();
  visit_dtype(ids.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* src = ids.data<T>();
      for (int64_t i = 0; i < ids.numel(); ++i) {
        const auto v = static_cast<int64_t>(src[i]);
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
          throw_error<ValueError>("{}: candidate id {} at position {} does not fit in int32", layer, v, i);
        }
        dst[i] = static_cast<int32_t>(v);
      }
    }
  });
  return out;
}

}  // namespace

BruteForceRetrieval::BruteForceRetrieval(int64_t k, bool return_scores, BruteForceRetrievalOptions options)
    : Layer("BruteForceRetrieval", std::move(options.name)), k_(k), return_scores_(return_scores) {
  set_autocast(false);  // scores in the dtype the candidates were indexed in, which it checks
  if (k < 1) throw_error<ValueError>("{}: expected k >= 1, got {}", name(), k);
  if (options.candidate_ids.defined()) {
    // Checked on their own now; against the candidates' rows when those arrive.
    if (!is_integer(options.candidate_ids.dtype())) {
      throw_error<DTypeError>("{}: expected integer candidate_ids, got {}", name(),
                              dtype_name(options.candidate_ids.dtype()));
    }
    if (options.candidate_ids.rank() != 1) {
      throw_error<ShapeError>("{}: expected candidate_ids of shape (num_candidates,), got {}", name(),
                              options.candidate_ids.shape().to_string());
    }
    ids_ = ids_as_int32(options.candidate_ids, name());
  }
  if (options.candidate_embeddings.defined()) update_candidates(options.candidate_embeddings);
}

void BruteForceRetrieval::check_candidates(const Tensor& embeddings, const Tensor& ids) const {
  if (!embeddings.defined()) throw_error<ValueError>("{}: candidate_embeddings is an undefined tensor", name());
  if (embeddings.rank() != 2) {
    throw_error<ShapeError>(
        "{}: candidate_embeddings must be a tensor of rank 2 (num_candidates, embedding_size), got shape {}", name(),
        embeddings.shape().to_string());
  }
  if (embeddings.dtype() != kFloat32 && embeddings.dtype() != kBFloat16) {
    throw_error<DTypeError>("{}: expected float32 or bfloat16 candidate_embeddings, got {}", name(),
                            dtype_name(embeddings.dtype()));
  }
  if (embeddings.dim(0) < k_) {
    throw_error<ValueError>(
        "{}: the number of candidates provided ({}) is less than the number of candidates to retrieve (k={})",
        name(), embeddings.dim(0), k_);
  }
  if (!ids.defined()) return;
  if (!is_integer(ids.dtype())) {
    throw_error<DTypeError>("{}: expected integer candidate_ids, got {}", name(), dtype_name(ids.dtype()));
  }
  if (ids.rank() != 1 || ids.dim(0) != embeddings.dim(0)) {
    throw_error<ShapeError>(
        "{}: candidate_embeddings and candidate_ids must have the same number of rows, got shapes {} and {}", name(),
        embeddings.shape().to_string(), ids.shape().to_string());
  }
}

void BruteForceRetrieval::set_candidate_embeddings(const Variable& embeddings, const Tensor& ids) {
  if (!embeddings.defined()) throw_error<ValueError>("{}: candidate_embeddings is an undefined variable", name());
  const Tensor& kept_ids = ids.defined() ? ids : ids_;
  check_candidates(embeddings.value(), kept_ids);
  if (ids.defined()) ids_ = ids_as_int32(ids, name());
  candidates_ = embeddings;
}

void BruteForceRetrieval::update_candidates(const Tensor& embeddings, const Tensor& ids) {
  const Tensor& kept_ids = ids.defined() ? ids : ids_;
  check_candidates(embeddings, kept_ids);
  if (ids.defined()) ids_ = ids_as_int32(ids, name());
  autograd::NoGradGuard no_grad;
  candidates_ = Variable(name() + "/candidate_embeddings", embeddings.clone(), /*trainable=*/false);
}

Tree BruteForceRetrieval::call(const Tree& inputs, bool /*training*/) {
  const Tensor& query = layers::detail::single_input(inputs, name());
  if (!has_candidates()) {
    throw_error<ValueError>("{}: no candidates to retrieve from: call update_candidates() or "
                            "set_candidate_embeddings() first",
                            name());
  }
  const Tensor& candidates = candidates_.value();
  const int64_t n = candidates.dim(0), d = candidates.dim(1);
  if (query.rank() != 2 || query.dim(1) != d) {
    throw_error<ShapeError>("{}: expected queries of shape (batch, {}), got {}", name(), d, query.shape().to_string());
  }
  if (query.dtype() != candidates.dtype()) {
    throw_error<DTypeError>("{}: expected queries of the candidates' dtype {}, got {}", name(),
                            dtype_name(candidates.dtype()), dtype_name(query.dtype()));
  }
  if (n < k_) {  // a shared variable cannot shrink, but keep the selection's precondition local
    throw_error<ValueError>("{}: {} candidates are fewer than k={}", name(), n, k_);
  }
  autograd::NoGradGuard no_grad;
  const int64_t batch = query.dim(0);
  Tensor top_scores = return_scores_ ? Tensor::empty(Shape{batch, k_}, candidates.dtype()) : Tensor();
  Tensor top_ids = Tensor::empty(Shape{batch, k_}, kInt32);
  const int64_t block_rows =
      std::max<int64_t>(1, kScoreBlockBytes / std::max<int64_t>(1, n * static_cast<int64_t>(dtype_size(candidates.dtype()))));
  for (int64_t row0 = 0; row0 < batch; row0 += block_rows) {
    const int64_t row1 = std::min(batch, row0 + block_rows);
    // (rows, D) @ (N, D)^T -> (rows, N)
    Tensor scores = ops::matmul(query.first_axis_slice(row0, row1), candidates, {.transpose_b = true});
    if (candidates.dtype() == kFloat32) {
      select_block<float>(scores, k_, row0, return_scores_ ? top_scores.data<float>() : nullptr,
                          top_ids.data<int32_t>());
    } else {
      select_block<bfloat16>(scores, k_, row0, return_scores_ ? top_scores.data<bfloat16>() : nullptr,
                             top_ids.data<int32_t>());
    }
  }
  if (ids_.defined()) {
    int32_t* out = top_ids.data<int32_t>();
    const int32_t* table = ids_.data<int32_t>();
    for (int64_t i = 0; i < top_ids.numel(); ++i) out[i] = table[out[i]];
  }
  if (!return_scores_) return top_ids;
  return Tree::list({top_scores, top_ids});
}

nlohmann::json BruteForceRetrieval::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["k"] = k_;
  config["return_scores"] = return_scores_;
  return config;
}

std::shared_ptr<BruteForceRetrieval> BruteForceRetrieval::from_config(const nlohmann::json& config) {
  ConfigReader r("BruteForceRetrieval", config);
  auto layer = std::make_shared<BruteForceRetrieval>(r.integer("k", 10), r.boolean("return_scores", true),
                                                     BruteForceRetrievalOptions{.name = layers::detail::config_name(r)});
  layers::detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::recsys
