// RecallAtK: how many of a query's true candidates appear among the first k ids that a
// retrieval layer returned (BruteForceRetrieval's ids, best first). With one true id per
// query this is top-k accuracy (TFRS's FactorizedTopK "top_k_categorical_accuracy").
// State: {total, count} (mergeable across replicas). One instance per thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::recsys {

struct RecallAtKOptions {
  int64_t k = 10;    // must be >= 1; only the first k retrieved ids count
  std::string name;  // empty: "recall_at_<k>"
};

// update_state(y_true, y_pred[, sample_weight]):
//   y_true: the true candidate ids, (batch,) or (batch, 1) — one per query — or
//     (batch, t): several relevant ids per query, padded with negative ids;
//   y_pred: the retrieved ids (batch, m), best first, m >= 1 (m < k uses all m).
// Per query: (true ids among the first k retrieved) / (true ids), counting each distinct
// true id once; 0 for a query without any (non-negative) true id. The result is the
// (sample-weighted) mean over queries, as Keras's MeanMetricWrapper.
// Ids: any integer dtype (float ids must hold integers to match).
//
//   recsys::RecallAtK recall({.k = 10});
//   recall.update_state(movie_ids, top_ids);  // (B,) and (B, 10) int32
//   double r = recall.result();
class RecallAtK final : public metrics::MeanMetricWithOptions<RecallAtK, RecallAtKOptions> {
 public:
  static constexpr const char* kClassName = "RecallAtK";
  // Throws ValueError "recall_at_0: expected k >= 1, got 0".
  explicit RecallAtK(RecallAtKOptions options = {});

  int64_t k() const { return options().k; }
  nlohmann::json get_config() const override;

 protected:
  // Throws ShapeError naming the metric: "recall_at_10: expected y_pred of shape
  // (batch, m) with y_true of shape (batch,), (batch, 1) or (batch, t); got y_true (4,)
  // and y_pred (5, 10)".
  metrics::internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;
};

}  // namespace chorus::recsys
