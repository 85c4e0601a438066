#include "chorus/callbacks/reduce_lr_on_plateau.h"

#include <algorithm>
#include <iostream>

#include "chorus/callbacks/python_format.h"
#include "chorus/core/error.h"
#include "chorus/models/model.h"

namespace chorus::callbacks {

ReduceLROnPlateau::ReduceLROnPlateau(ReduceLROnPlateauOptions options)
    : MonitorCallback("ReduceLROnPlateau", options.monitor, options.mode, std::nullopt, options.min_delta),
      options_(std::move(options)) {
  if (options_.factor >= 1.0) {
    throw_error<ValueError>("ReduceLROnPlateau does not support a factor >= 1.0. Received factor={}",
                            python_repr(options_.factor));
  }
}

void ReduceLROnPlateau::on_train_begin(const models::Logs& /*logs*/) {
  best_ = std::nullopt;
  cooldown_counter_ = 0;
  wait_ = 0;
}

void ReduceLROnPlateau::on_epoch_end(int epoch, const models::Logs& logs) {
  const std::optional<double> current = monitor_value(logs);
  if (!current) {
    warn_once("Learning rate reduction is conditioned on metric `" + monitor() +
              "` which is not available. Available metrics are: " + joined_names(logs) + ".");
    return;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    wait_ = 0;
  }
  if (is_improvement(*current, best_)) {
    best_ = *current;
    wait_ = 0;
  } else if (!in_cooldown()) {
    ++wait_;
    if (wait_ >= options_.patience && reduce_learning_rate(epoch)) {
      cooldown_counter_ = options_.cooldown;
      wait_ = 0;
    }
  }
}

bool ReduceLROnPlateau::reduce_learning_rate(int epoch) {
  optimizers::Optimizer& optimizer = model().optimizer();
  const double old_lr = optimizer.learning_rate();
  // Keras compares with float32(min_lr): a rate held in float32 that was set to min_lr
  // reads back as that, and must not count as above it.
  const double min_lr_f32 = static_cast<float>(options_.min_lr);
  if (!(old_lr > options_.min_lr && old_lr > min_lr_f32)) return false;
  const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
  optimizer.set_learning_rate(new_lr);
  if (options_.verbose > 0) {
    std::cout << "\nEpoch " << epoch + 1 << ": ReduceLROnPlateau reducing learning rate to " << python_repr(new_lr)
              << ".\n";
  }
  return true;
}

std::optional<models::CallbackState> ReduceLROnPlateau::get_state() const {
  return models::CallbackState{class_name(), {{"wait", wait_}, {"cooldown_counter", cooldown_counter_}, {"best", best_to_json()}}};
}

void ReduceLROnPlateau::set_state(const models::CallbackState& state) {
  wait_ = state.get<int>("wait");
  cooldown_counter_ = state.get<int>("cooldown_counter");
  best_from_json(state);
}

}  // namespace chorus::callbacks
