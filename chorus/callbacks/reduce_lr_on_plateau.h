// ReduceLROnPlateau: multiplies the optimizer's learning rate by `factor` when a
// monitored quantity has stopped improving for `patience` epochs (Keras's
// ReduceLROnPlateau). One training thread.
#pragma once

#include <string>

#include "chorus/callbacks/monitor_callback.h"

namespace chorus::callbacks {

struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  // new_lr = lr * factor; must be < 1.
  double factor = 0.1;
  // Epochs without improvement before the rate is reduced.
  int patience = 10;
  // 0: silent; 1: "\nEpoch 12: ReduceLROnPlateau reducing learning rate to 0.0001." on stdout.
  int verbose = 0;
  Mode mode = Mode::kAuto;
  // A change smaller than |min_delta| is no improvement.
  double min_delta = 1e-4;
  // Epochs after a reduction during which no new reduction is considered.
  int cooldown = 0;
  // The rate is never reduced below this.
  double min_lr = 0.0;
};

// Unlike Keras, the current rate is not added to the epoch's logs (they are read-only here).
class ReduceLROnPlateau : public MonitorCallback {
 public:
  // Throws ValueError for factor >= 1 or (kAuto) a monitor whose direction is unknown.
  explicit ReduceLROnPlateau(ReduceLROnPlateauOptions options = {});

  // Resets the best value, the wait and the cooldown.
  void on_train_begin(const models::Logs& logs) override;
  // Reduces through Optimizer::set_learning_rate, which throws ValueError when the
  // optimizer's rate is a LearningRateSchedule.
  void on_epoch_end(int epoch, const models::Logs& logs) override;

  // The wait, cooldown and best value.
  std::optional<models::CallbackState> get_state() const override;
  void set_state(const models::CallbackState& state) override;

  bool in_cooldown() const { return cooldown_counter_ > 0; }
  int wait() const { return wait_; }

 private:
  bool reduce_learning_rate(int epoch);

  ReduceLROnPlateauOptions options_;
  int cooldown_counter_ = 0;
  int wait_ = 0;
};

}  // namespace chorus::callbacks
