// Accuracy: how often predictions equal labels (keras.metrics.Accuracy), and the
// "accuracy" string of compile(), whose kind (binary, categorical or sparse categorical
// accuracy) the first batch's shapes settle. State: {total, count}. One instance per
// thread.
#pragma once

#include <string>

#include "chorus/metrics/mean_metric_wrapper.h"

namespace chorus::metrics {

// What an Accuracy compares. kAuto becomes one of the last three on the first update.
enum class AccuracyKind { kExact, kAuto, kBinary, kCategorical, kSparseCategorical };

struct AccuracyOptions {
  std::string name = "accuracy";
  // kExact: Keras's Accuracy class. kAuto: Keras's compile rule for "accuracy"/"acc",
  // applied to the first batch: y_pred's last dim 1 → binary accuracy (threshold 0.5);
  // else y_true of lower rank than y_pred, or with last dim 1 → sparse categorical;
  // else categorical. The name does not change.
  AccuracyKind kind = AccuracyKind::kExact;
};

class Accuracy : public MeanMetricWrapper {
 public:
  // By default exact equality of y_true and y_pred (rounded to y_pred's dtype),
  // elementwise after Keras's rank alignment.
  explicit Accuracy(AccuracyOptions options = {});
  // The metric compile() makes from "accuracy": AccuracyKind::kAuto.
  static Accuracy automatic(std::string name = "accuracy");

  AccuracyKind kind() const { return kind_; }
  std::unique_ptr<Metric> clone() const override;
  // {"name", "kind": "exact" | "auto" | "binary" | "categorical" | "sparse_categorical"}.
  nlohmann::json get_config() const override;
  nlohmann::json to_config() const override;

  // "exact", "auto", ... and back; parse throws ValueError for an unknown kind.
  static std::string kind_name(AccuracyKind kind);
  static AccuracyKind parse_kind(const std::string& kind);

 protected:
  internal::SampleValues values(const Tensor& y_true, const Tensor& y_pred) override;

 private:
  AccuracyKind kind_;
};

}  // namespace chorus::metrics
