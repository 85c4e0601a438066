#include "chorus/callbacks/learning_rate_scheduler.h"

#include <iostream>

#include "chorus/callbacks/python_format.h"
#include "chorus/core/error.h"
#include "chorus/models/model.h"

namespace chorus::callbacks {

LearningRateScheduler::LearningRateScheduler(Schedule schedule, int verbose)
    : schedule_(std::move(schedule)), verbose_(verbose) {
  if (!schedule_) throw ValueError("LearningRateScheduler: expected a schedule function, got an empty one");
}

void LearningRateScheduler::on_epoch_begin(int epoch, const models::Logs& /*logs*/) {
  optimizers::Optimizer& optimizer = model().optimizer();
  const double learning_rate = schedule_(epoch, optimizer.learning_rate());
  optimizer.set_learning_rate(learning_rate);
  if (verbose_ > 0) {
    std::cout << "\nEpoch " << epoch + 1 << ": LearningRateScheduler setting learning rate to "
              << python_repr(learning_rate) << ".\n";
  }
}

}  // namespace chorus::callbacks
