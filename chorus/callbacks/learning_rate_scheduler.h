// LearningRateScheduler: sets the optimizer's learning rate at the start of every epoch
// from a function of the epoch and the current rate (Keras's LearningRateScheduler).
// One training thread.
#pragma once

#include <functional>

#include "chorus/models/callback.h"
#include "chorus/models/logs.h"

namespace chorus::callbacks {

//   LearningRateScheduler([](int epoch, double lr) { return epoch < 10 ? lr : lr * std::exp(-0.1); })
//
// Unlike Keras, the rate is not added to the epoch's logs (they are read-only here).
class LearningRateScheduler : public models::Callback {
 public:
  // `epoch` counts from 0; `learning_rate` is the optimizer's current rate.
  using Schedule = std::function<double(int epoch, double learning_rate)>;

  // verbose 1 prints "\nEpoch 3: LearningRateScheduler setting learning rate to 0.01."
  // Throws ValueError for an empty `schedule`.
  explicit LearningRateScheduler(Schedule schedule, int verbose = 0);

  // Calls the schedule and Optimizer::set_learning_rate, which throws ValueError when
  // the optimizer's rate is a LearningRateSchedule.
  void on_epoch_begin(int epoch, const models::Logs& logs) override;
  bool implements_train_batch_hooks() const override { return false; }
  bool implements_test_batch_hooks() const override { return false; }

 private:
  Schedule schedule_;
  int verbose_;
};

}  // namespace chorus::callbacks
