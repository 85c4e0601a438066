#include "chorus/callbacks/tensorboard.h"

#include <ctime>
#include <filesystem>

#include <fmt/chrono.h>

#include "chorus/callbacks/profile_batches.h"
#include "chorus/core/error.h"
#include "chorus/distribution/initialize.h"
#include "chorus/io/event_file_writer.h"
#include "chorus/models/model.h"

namespace chorus::callbacks {

TensorBoard::TensorBoard(std::string log_dir, TensorBoardOptions options)
    : log_dir_(std::move(log_dir)), options_(options) {
  if (log_dir_.empty()) throw ValueError("TensorBoard: expected a log directory. Received: log_dir=\"\"");
  if (options_.update_freq && *options_.update_freq < 1) {
    throw_error<ValueError>(
        "TensorBoard: expected update_freq >= 1 (a number of batches; nullopt for once an epoch). Received: "
        "update_freq={}",
        *options_.update_freq);
  }
  const auto [first, last] = options_.profile_batch;
  if (!(first == 0 && last == 0) && (first < 1 || last < first)) {
    throw_error<ValueError>(
        "TensorBoard: profile_batch must be {{0, 0}} (no profiling) or a range of batches {{first, last}} with 1 <= "
        "first <= last. Received: profile_batch={{{}, {}}}",
        first, last);
  }
}

TensorBoard::~TensorBoard() = default;
TensorBoard::TensorBoard(TensorBoard&&) noexcept = default;
TensorBoard& TensorBoard::operator=(TensorBoard&&) noexcept = default;

io::EventFileWriter& TensorBoard::train_writer() {
  if (!train_writer_) train_writer_ = std::make_unique<io::EventFileWriter>(std::filesystem::path(log_dir_) / "train");
  return *train_writer_;
}

io::EventFileWriter& TensorBoard::val_writer() {
  if (!val_writer_) val_writer_ = std::make_unique<io::EventFileWriter>(std::filesystem::path(log_dir_) / "validation");
  return *val_writer_;
}

void TensorBoard::close_writers() {
  // Moved out first: a close that throws still leaves the callback ready for the next fit.
  std::unique_ptr<io::EventFileWriter> train = std::move(train_writer_), val = std::move(val_writer_);
  if (train) train->close();
  if (val) val->close();
}

void TensorBoard::on_train_begin(const models::Logs& logs) {
  close_writers();  // an evaluate() before this fit may have left a validation file open
  chief_ = distribution::is_chief();
  global_train_batch_ = 0;
  if (chief_) train_writer();  // fails now, not after the first epoch, when log_dir is unwritable
  profile_.reset();
  if (options_.profile_batch.first > 0) {
    // Keras's layout (<log_dir>/train/plugins/profile/<run>/<host>.<suffix>), one run per fit.
    const std::string run = fmt::format("{:%Y_%m_%d_%H_%M_%S}", fmt::localtime(std::time(nullptr)));
    profile_ = std::make_unique<ProfileBatches>(
        std::filesystem::path(log_dir_) / "train" / "plugins" / "profile" / run / (io::host_name() + ".trace.json"),
        options_.profile_batch.first, options_.profile_batch.second);
    profile_->on_train_begin(logs);
  }
}

void TensorBoard::on_train_end(const models::Logs& logs) {
  close_writers();
  if (profile_) profile_->on_train_end(logs);
}

void TensorBoard::on_train_batch_begin(int64_t batch, const models::Logs& logs) {
  ++global_train_batch_;
  if (profile_) profile_->on_train_batch_begin(batch, logs);
}

void TensorBoard::on_train_batch_end(int64_t batch, const models::Logs& logs) {
  if (profile_) profile_->on_train_batch_end(batch, logs);
  if (!chief_ || !options_.update_freq || global_train_batch_ % *options_.update_freq != 0) return;
  for (const auto& [name, value] : logs) train_writer().add_scalar("batch_" + name, value, global_train_batch_);
}

void TensorBoard::on_epoch_end(int epoch, const models::Logs& logs) {
  if (!chief_ || logs.empty()) return;
  bool has_val = false;
  for (const auto& [name, value] : logs) {
    if (name.starts_with("val_")) {
      has_val = true;
      continue;
    }
    train_writer().add_scalar("epoch_" + name, value, epoch);
  }
  // As Keras's _collect_learning_rate: the rate after the epoch, after the metrics.
  if (model().compiled()) train_writer().add_scalar("epoch_learning_rate", model().optimizer().learning_rate(), epoch);
  train_writer().flush();
  if (!has_val) return;
  for (const auto& [name, value] : logs) {
    if (name.starts_with("val_")) val_writer().add_scalar("epoch_" + name.substr(4), value, epoch);
  }
  val_writer().flush();
}

// Keras writes every evaluation (during fit and in evaluate()) against the optimizer's
// step count, so evaluations between epochs line up with batch-level training curves.
void TensorBoard::on_test_end(const models::Logs& logs) {
  // evaluate() runs no on_train_begin: decide here too.
  if (!has_model() || !model().compiled() || !distribution::is_chief()) return;
  const int64_t iterations = model().optimizer().iterations();
  for (const auto& [name, value] : logs) {
    val_writer().add_scalar("evaluation_" + name + "_vs_iterations", value, iterations);
  }
  val_writer().flush();
}

}  // namespace chorus::callbacks
