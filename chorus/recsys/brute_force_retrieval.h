// BruteForceRetrieval: exact top-k retrieval over a set of candidate embeddings
// (keras_rs.layers.BruteForceRetrieval). Holds a handle to the candidates (a Variable it
// shares, or its own copy) and optional candidate ids. Safe to call from several threads
// once candidates are set; setting candidates must not race with calls.
#pragma once

#include <memory>
#include <string>

#include "chorus/layers/layer.h"

namespace chorus::recsys {

using autograd::Variable;

struct BruteForceRetrievalOptions {
  // (N, D) candidate embeddings to start with (copied, as update_candidates does).
  // Undefined: set them later with update_candidates() or set_candidate_embeddings().
  Tensor candidate_embeddings;
  // (N,) integer identifiers returned instead of row indices; cast to int32 as keras-rs
  // does. They apply to whichever candidates are set next (keras-rs refuses ids without
  // embeddings; chorus keeps them for set_candidate_embeddings). Default: row indices.
  Tensor candidate_ids;
  std::string name;  // empty: "brute_force_retrieval", "brute_force_retrieval_1", ...
};

// Input: queries (B, D) of the candidates' dtype (float32 or bfloat16).
// Output: the top-k candidates of each query by dot-product score, best first, ties
// broken by the lower candidate index (so results are deterministic):
//   return_scores: the list [scores (B, k) of the candidates' dtype, ids (B, k) int32]
//     (keras-rs's (top_scores, top_ids) tuple);
//   otherwise: ids (B, k) int32 alone.
// Ids are row indices into the candidates, or candidate_ids[row] when ids were given.
// A NaN score ranks above every number (as ops::top_k).
//
// Scores and selection are backend::cpu::top_k_products: threads take blocks of queries,
// score each block against a block of candidates at a time on oneDNN, and keep each
// query's running top k (a vectorised scan against a rising threshold), so the (B, N)
// score matrix is never materialised, however large B or N.
//
// Not differentiable: the layer runs without recording on the tape, so no gradient
// reaches the queries or the candidates through it (keras-rs models use it only for
// inference; train through the embeddings directly, as the tutorial's compute_loss does).
//
// The candidates are not weights of this layer (weights() is empty): a shared table is
// owned, saved and trained by its own layer, and an own copy is per-process state that,
// as in keras-rs, must be set again after rebuilding the layer from its config.
//
//   recsys::BruteForceRetrieval retrieval(/*k=*/10, /*return_scores=*/false);
//   retrieval.set_candidate_embeddings(movie_embedding.embeddings());  // shared, no copy
//   Tensor top_ids = retrieval(user_embeddings);  // (B, 10) int32
class BruteForceRetrieval : public layers::Layer {
 public:
  // Throws ValueError "brute_force_retrieval: expected k >= 1, got 0", and every error of
  // update_candidates() for options.candidate_embeddings / candidate_ids.
  explicit BruteForceRetrieval(int64_t k = 10, bool return_scores = true, BruteForceRetrievalOptions options = {});

  int64_t k() const { return k_; }
  bool return_scores() const { return return_scores_; }
  // Whether candidates are set, and how many (0 before).
  bool has_candidates() const { return candidates_.defined(); }
  int64_t num_candidates() const { return has_candidates() ? candidates_.shape().dim(0) : 0; }
  // The candidates' variable (shared or own); undefined before any are set.
  const Variable& candidate_embeddings() const { return candidates_; }
  // The (N,) int32 ids, or undefined when results are row indices.
  const Tensor& candidate_ids() const { return ids_; }

  // Retrieves from `embeddings` itself (no copy): later assignments to the variable, such
  // as optimizer steps on a shared embedding table, are seen by the next call. `ids`, if
  // given, replace the current ids; else ids from the options or an earlier call stay.
  // Throws as update_candidates().
  void set_candidate_embeddings(const Variable& embeddings, const Tensor& ids = {});

  // Replaces the candidates with a copy of `embeddings` (N, D) and the ids with `ids`
  // (N,) when given. Unlike keras-rs, which assigns into its existing variable, the new
  // set may have another size, and a shared variable is released, never written to.
  // Throws, naming the layer:
  //   ShapeError unless embeddings have rank 2 and ids rank 1 with N rows;
  //   ValueError when N < k ("brute_force_retrieval: the number of candidates provided
  //     (5) is less than the number of candidates to retrieve (k=10)");
  //   DTypeError for embeddings not float32/bfloat16 or non-integer ids; ValueError for an
  //     id outside the int32 range.
  void update_candidates(const Tensor& embeddings, const Tensor& ids = {});

  // {"name", "trainable", "k", "return_scores"}: like keras-rs, the candidates are not
  // part of the config.
  nlohmann::json get_config() const override;
  // The layer get_config() describes, without candidates. Throws ValueError for a value
  // of the wrong type, and as the constructor.
  static std::shared_ptr<BruteForceRetrieval> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override {
    return std::make_shared<BruteForceRetrieval>(std::move(*this));
  }

 protected:
  // Throws, naming the layer: ValueError when no candidates are set; ShapeError unless
  // the query is (B, D) with the candidates' D ("brute_force_retrieval: expected queries
  // of shape (batch, 32), got (4, 16)"); DTypeError when its dtype is not theirs.
  Tree call(const Tree& inputs, bool training) override;

 private:
  void check_candidates(const Tensor& embeddings, const Tensor& ids) const;

  int64_t k_;
  bool return_scores_;
  Variable candidates_;  // (N, D), not trainable through this layer
  Tensor ids_;           // (N,) int32 or undefined
};

}  // namespace chorus::recsys
