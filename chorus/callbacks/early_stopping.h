// EarlyStopping: ends fit (Model::stop_training) when a monitored quantity has stopped
// improving, and can put back the weights of the best epoch (Keras's EarlyStopping).
// Holds a copy of the best weights when restore_best_weights is set. One training thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "chorus/callbacks/monitor_callback.h"
#include "chorus/core/tensor.h"

namespace chorus::callbacks {

struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  // A change smaller than |min_delta| is no improvement.
  double min_delta = 0;
  // Epochs without improvement after which training stops.
  int patience = 0;
  // 0: silent; 1: "Epoch 7: early stopping" and the restore message on stdout.
  int verbose = 0;
  Mode mode = Mode::kAuto;
  // Training also stops if the quantity does not beat this within `patience` epochs.
  std::optional<double> baseline;
  // Assigns the weights of the best epoch back at the end of fit (whether or not it
  // stopped early, as Keras 3); copies every weight at each improvement.
  bool restore_best_weights = false;
  // Epochs to wait before monitoring starts (a warm-up that cannot stop training).
  int start_from_epoch = 0;
};

//   model.fit(train, {.epochs = 100, .validation_data = val,
//                     .callbacks = {EarlyStopping({.patience = 3, .restore_best_weights = true})}});
class EarlyStopping : public MonitorCallback {
 public:
  // Throws ValueError when mode is kAuto and the direction of `monitor` is unknown.
  explicit EarlyStopping(EarlyStoppingOptions options = {});

  // Resets the state, so one instance can serve several fits.
  void on_train_begin(const models::Logs& logs) override;
  void on_epoch_end(int epoch, const models::Logs& logs) override;
  void on_train_end(const models::Logs& logs) override;
  // The wait, best value and epoch, and the best weights when restore_best_weights.
  std::optional<models::CallbackState> get_state() const override;
  void set_state(const models::CallbackState& state) override;

  // The epoch (0-based) that set stop_training; 0 if none did.
  int stopped_epoch() const { return stopped_epoch_; }
  int best_epoch() const { return best_epoch_; }
  // Epochs since the last improvement.
  int wait() const { return wait_; }

 private:
  void snapshot_weights();

  EarlyStoppingOptions options_;
  int wait_ = 0;
  int stopped_epoch_ = 0;
  int best_epoch_ = 0;
  std::vector<Tensor> best_weights_;
  bool has_best_weights_ = false;
};

}  // namespace chorus::callbacks
