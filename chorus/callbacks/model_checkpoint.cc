#include "chorus/callbacks/model_checkpoint.h"

#include <filesystem>
#include <iostream>

#include "chorus/core/error.h"
#include "chorus/models/model.h"
#include "chorus/models/sharded_checkpoint.h"

namespace chorus::callbacks {

ModelCheckpoint::ModelCheckpoint(std::string filepath, ModelCheckpointOptions options)
    : MonitorCallback("ModelCheckpoint", options.monitor, options.mode, options.initial_value_threshold, 0.0),
      filepath_(std::move(filepath), "ModelCheckpoint: filepath"),
      options_(std::move(options)) {
  if (options_.save_freq && *options_.save_freq < 1) {
    throw_error<ValueError>("ModelCheckpoint: expected save_freq >= 1 batches or nullopt (every epoch). Received: "
                            "save_freq={}",
                            *options_.save_freq);
  }
}

void ModelCheckpoint::on_epoch_begin(int epoch, const models::Logs& /*logs*/) { current_epoch_ = epoch; }

void ModelCheckpoint::on_epoch_end(int epoch, const models::Logs& logs) {
  if (!options_.save_freq) save_model(epoch, std::nullopt, logs);
}

void ModelCheckpoint::on_train_batch_end(int64_t batch, const models::Logs& logs) {
  if (should_save_on_batch(batch)) save_model(current_epoch_, batch, logs);
}

std::string ModelCheckpoint::format_filepath(int epoch, std::optional<int64_t> batch,
                                             const models::Logs& logs) const {
  FormatTemplate::Arguments arguments;
  arguments.emplace_back("epoch", int64_t{epoch} + 1);
  if (batch && !logs.contains("batch")) arguments.emplace_back("batch", *batch + 1);
  for (const auto& [name, value] : logs) arguments.emplace_back(name, value);
  return filepath_.format(arguments);
}

// Counts batches across epochs: a batch index that does not grow starts a new epoch.
bool ModelCheckpoint::should_save_on_batch(int64_t batch) {
  if (!options_.save_freq) return false;
  const int64_t added = (!last_batch_seen_ || batch <= *last_batch_seen_) ? batch + 1 : batch - *last_batch_seen_;
  batches_seen_since_last_saving_ += added;
  last_batch_seen_ = batch;
  if (batches_seen_since_last_saving_ < *options_.save_freq) return false;
  batches_seen_since_last_saving_ = 0;
  return true;
}

bool ModelCheckpoint::should_save_model(int epoch, const models::Logs& logs, const std::string& filepath) {
  if (!options_.save_best_only) {
    if (options_.verbose > 0) std::cout << "\nEpoch " << epoch + 1 << ": saving model to " << filepath << "\n";
    return true;
  }
  const std::optional<double> current = monitor_value(logs);
  if (!current) {
    warn_once("Can save best model only with " + monitor() + " available.");
    return true;
  }
  const std::string best_text = best_ ? python_fixed(*best_, 5) : "None";
  if (is_improvement(*current, best_)) {
    if (options_.verbose > 0) {
      std::cout << "\nEpoch " << epoch + 1 << ": " << monitor() << " improved from " << best_text << " to "
                << python_fixed(*current, 5) << ", saving model to " << filepath << "\n";
    }
    best_ = *current;
    return true;
  }
  if (options_.verbose > 0) {
    std::cout << "\nEpoch " << epoch + 1 << ": " << monitor() << " did not improve from " << best_text << "\n";
  }
  return false;
}

void ModelCheckpoint::save_model(int epoch, std::optional<int64_t> batch, const models::Logs& logs) {
  const std::string filepath = format_filepath(epoch, batch, logs);
  if (!should_save_model(epoch, logs, filepath)) return;
  const std::filesystem::path path(filepath);
  // A directory is refused, as Keras does, unless it is the shards an earlier save wrote.
  if (options_.save_weights_only && std::filesystem::is_directory(path) &&
      !std::filesystem::exists(path / models::shard_index_name("model"))) {
    throw_error<IOError>(
        "Please specify a non-directory filepath for ModelCheckpoint. Filepath used is an existing directory: {}",
        filepath);
  }
  if (path.has_parent_path()) {
    std::error_code error;
    std::filesystem::create_directories(path.parent_path(), error);
    if (error) {
      throw_error<IOError>("ModelCheckpoint: cannot create the directory {}: {}", path.parent_path().string(),
                           error.message());
    }
  }
  if (options_.save_weights_only) {
    model().save_weights(path);
  } else {
    model().save(path);
  }
  if (options_.verbose > 0) std::cout << "\nEpoch " << epoch + 1 << ": finished saving model to " << filepath << "\n";
}

std::optional<models::CallbackState> ModelCheckpoint::get_state() const {
  return models::CallbackState{class_name(),
                               {{"best", best_to_json()},
                                {"current_epoch", current_epoch_},
                                {"batches_seen_since_last_saving", batches_seen_since_last_saving_},
                                {"last_batch_seen", last_batch_seen_ ? nlohmann::json(*last_batch_seen_) : nlohmann::json()}}};
}

void ModelCheckpoint::set_state(const models::CallbackState& state) {
  best_from_json(state);
  current_epoch_ = state.get<int>("current_epoch");
  batches_seen_since_last_saving_ = state.get<int64_t>("batches_seen_since_last_saving");
  last_batch_seen_ = state.values.contains("last_batch_seen") && state.values["last_batch_seen"].is_null()
                         ? std::nullopt
                         : std::optional(state.get<int64_t>("last_batch_seen"));
}

}  // namespace chorus::callbacks
