// MonitorCallback: the shared part of the callbacks that watch one logged quantity
// (ModelCheckpoint, EarlyStopping, ReduceLROnPlateau; Keras's MonitorCallback): which
// direction is better and whether a value improves on a reference. One training thread.
#pragma once

#include <optional>
#include <string>

#include "chorus/models/callback.h"
#include "chorus/models/logs.h"

namespace chorus::callbacks {

// Which way the monitored quantity should move (Keras's mode "auto", "min", "max").
// kAuto: down for "loss" and "*_loss" (with or without "val_"), up for accuracies, AUC,
// precision, recall and F-scores, down for error and crossentropy metrics.
enum class Mode { kAuto, kMin, kMax };

class MonitorCallback : public models::Callback {
 public:
  const std::string& monitor() const { return monitor_; }
  // True when smaller values are better (mode kMin, or kAuto resolved to it).
  bool minimizing() const { return minimizing_; }
  // The best value seen (or the baseline given), if any.
  std::optional<double> best() const { return best_; }
  // EarlyStopping and ReduceLROnPlateau act at epoch ends; ModelCheckpoint says otherwise
  // when it saves every N batches.
  bool implements_train_batch_hooks() const override { return false; }
  bool implements_test_batch_hooks() const override { return false; }

 protected:
  // `class_name` ("EarlyStopping") names the callback in messages. Throws ValueError for
  // a `mode` outside the enum, or when it is kAuto and the direction of `monitor` cannot
  // be inferred (Keras raises the same, at the first epoch end).
  MonitorCallback(std::string class_name, std::string monitor, Mode mode, std::optional<double> best,
                  double min_delta);

  // Keras's _is_improvement: `value` beats `reference` by more than |min_delta| in the
  // better direction; anything beats no reference. NaN never improves.
  bool is_improvement(double value, std::optional<double> reference) const;

  // The monitored value in `logs`, if present.
  std::optional<double> monitor_value(const models::Logs& logs) const;
  // Prints "WARNING: <message>" to stderr the first time only (Python's warnings.warn
  // shows a warning once per place too).
  void warn_once(const std::string& message);

  const std::string& class_name() const { return class_name_; }
  // best_ in a callback state: the value, or null for none; and back (ValueError naming
  // the field when malformed).
  nlohmann::json best_to_json() const;
  void best_from_json(const models::CallbackState& state);

  std::optional<double> best_;

 private:
  std::string class_name_;
  std::string monitor_;
  bool minimizing_;
  double min_delta_;
  bool warned_ = false;
};

// "loss,accuracy": the names in `logs`, comma-separated as Keras lists them.
std::string joined_names(const models::Logs& logs);

}  // namespace chorus::callbacks
