#include "chorus/recsys/brute_force_retrieval.h"

#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "chorus/autograd/tape.h"
#include "chorus/backend/cpu/top_k_kernels.h"
#include "chorus/core/error.h"
#include "chorus/layers/layer_util.h"
#include "chorus/ops/sharded_ops.h"

namespace chorus::recsys {
namespace {

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
  // A tensor sharded over a model-parallel mesh is gathered whole first, as ops without a
  // sharding rule do (ops/sharded_ops.h).
  const Tensor whole_query = ops::sharded::replicate(query), whole_candidates = ops::sharded::replicate(candidates);
  backend::cpu::top_k_products(candidates.dtype(), whole_query.raw_data(), batch, whole_candidates.raw_data(), n, d, k_,
                               return_scores_ ? top_scores.raw_data() : nullptr, top_ids.data<int32_t>());
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
