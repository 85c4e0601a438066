// ModelCheckpoint: saves the model (Model::save, a directory) or its weights
// (Model::save_weights, one file) during fit, every epoch or every N batches, optionally
// only when a monitored quantity improves (Keras's ModelCheckpoint). One training thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "chorus/callbacks/monitor_callback.h"
#include "chorus/callbacks/python_format.h"

namespace chorus::callbacks {

struct ModelCheckpointOptions {
  // The logged quantity that decides "best" when save_best_only is set.
  std::string monitor = "val_loss";
  // 0: silent; 1: a message on stdout for each decision and save.
  int verbose = 0;
  // Saves only when `monitor` improves on the best value so far. A missing `monitor`
  // prints a warning once and saves anyway (Keras 3).
  bool save_best_only = false;
  // Model::save_weights instead of Model::save.
  bool save_weights_only = false;
  Mode mode = Mode::kAuto;
  // nullopt: at the end of every epoch (Keras's "epoch"); N: after every N training
  // batches, counted across epochs.
  std::optional<int64_t> save_freq;
  // The "best" value to beat before the first save (save_best_only only).
  std::optional<double> initial_value_threshold;
};

// `filepath` is a Python str.format template: {epoch} (1-based, as Keras), {batch}
// (1-based, when saving every N batches) and any log name, with a format spec
// ("ckpt-{epoch:02d}-{val_loss:.4f}.keras"). Missing parent directories are created.
//
//   model.fit(train, {.epochs = 5, .callbacks = {ModelCheckpoint("ckpt/ckpt-{epoch}.keras")}});
class ModelCheckpoint : public MonitorCallback {
 public:
  // Throws ValueError for a bad template, save_freq < 1, or (kAuto) a monitor whose
  // direction is unknown.
  explicit ModelCheckpoint(std::string filepath, ModelCheckpointOptions options = {});

  void on_epoch_begin(int epoch, const models::Logs& logs) override;
  void on_epoch_end(int epoch, const models::Logs& logs) override;
  void on_train_batch_end(int64_t batch, const models::Logs& logs) override;
  bool implements_train_batch_hooks() const override { return options_.save_freq.has_value(); }
  // The best value and the batch counters.
  std::optional<models::CallbackState> get_state() const override;
  void set_state(const models::CallbackState& state) override;

  // The path a save at `epoch` (0-based) and, for batch saves, `batch` (0-based) would
  // use. Throws ValueError naming a template field that has no value.
  std::string format_filepath(int epoch, std::optional<int64_t> batch, const models::Logs& logs) const;

  const ModelCheckpointOptions& options() const { return options_; }

 private:
  bool should_save_on_batch(int64_t batch);
  bool should_save_model(int epoch, const models::Logs& logs, const std::string& filepath);
  void save_model(int epoch, std::optional<int64_t> batch, const models::Logs& logs);

  FormatTemplate filepath_;
  ModelCheckpointOptions options_;
  int current_epoch_ = 0;
  int64_t batches_seen_since_last_saving_ = 0;
  std::optional<int64_t> last_batch_seen_;
};

}  // namespace chorus::callbacks
