#include "chorus/callbacks/early_stopping.h"

#include <iostream>

#include "chorus/models/model.h"

namespace chorus::callbacks {

EarlyStopping::EarlyStopping(EarlyStoppingOptions options)
    : MonitorCallback("EarlyStopping", options.monitor, options.mode, std::nullopt, options.min_delta),
      options_(std::move(options)) {}

void EarlyStopping::on_train_begin(const models::Logs& /*logs*/) {
  wait_ = 0;
  stopped_epoch_ = 0;
  best_ = std::nullopt;
  best_weights_.clear();
  has_best_weights_ = false;
  best_epoch_ = 0;
}

void EarlyStopping::on_epoch_end(int epoch, const models::Logs& logs) {
  const std::optional<double> current = monitor_value(logs);
  if (!current) {
    warn_once("Early stopping conditioned on metric `" + monitor() +
              "` which is not available. Available metrics are: " + joined_names(logs));
    return;
  }
  if (epoch < options_.start_from_epoch) return;
  ++wait_;
  if (is_improvement(*current, best_)) {
    best_ = *current;
    best_epoch_ = epoch;
    if (options_.restore_best_weights) snapshot_weights();
    // The wait restarts only when the value beats both the baseline and the previous best.
    if (!options_.baseline || is_improvement(*current, options_.baseline)) wait_ = 0;
    return;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stopped_epoch_ = epoch;
    model().stop_training = true;
  }
}

void EarlyStopping::on_train_end(const models::Logs& /*logs*/) {
  if (stopped_epoch_ > 0 && options_.verbose > 0) std::cout << "Epoch " << stopped_epoch_ + 1 << ": early stopping\n";
  if (!options_.restore_best_weights || !has_best_weights_) return;
  if (options_.verbose > 0) {
    std::cout << "Restoring model weights from the end of the best epoch: " << best_epoch_ + 1 << ".\n";
  }
  const std::vector<autograd::Variable> weights = model().weights();
  for (size_t i = 0; i < weights.size() && i < best_weights_.size(); ++i) weights[i].assign(best_weights_[i]);
}

std::optional<models::CallbackState> EarlyStopping::get_state() const {
  return models::CallbackState{class_name(),
                               {{"wait", wait_},
                                {"stopped_epoch", stopped_epoch_},
                                {"best_epoch", best_epoch_},
                                {"best", best_to_json()},
                                {"has_best_weights", has_best_weights_}},
                               best_weights_};
}

void EarlyStopping::set_state(const models::CallbackState& state) {
  wait_ = state.get<int>("wait");
  stopped_epoch_ = state.get<int>("stopped_epoch");
  best_epoch_ = state.get<int>("best_epoch");
  best_from_json(state);
  has_best_weights_ = state.get<bool>("has_best_weights");
  best_weights_ = state.tensors;
}

// Keras's get_weights(): a copy of every weight, trainable or not (moving statistics too).
void EarlyStopping::snapshot_weights() {
  best_weights_.clear();
  for (const autograd::Variable& weight : model().weights()) best_weights_.push_back(weight.value().clone());
  has_best_weights_ = true;
}

}  // namespace chorus::callbacks
