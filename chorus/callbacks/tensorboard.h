// TensorBoard: writes the logs of fit (and evaluate) as scalar summaries in TensorBoard's
// event files (Keras's TensorBoard callback). Owns the open files between on_train_begin
// and on_train_end. One training thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "chorus/models/callback.h"
#include "chorus/models/logs.h"

namespace chorus::io {
class EventFileWriter;
}

namespace chorus::callbacks {

class ProfileBatches;

struct TensorBoardOptions {
  // nullopt (Keras's "epoch"): scalars at the end of each epoch only. N: also
  // batch_<name> after every Nth training batch, counted from 1 across the epochs of a fit
  // (Keras's "batch" is 1). Many small writes slow training; N >= 1.
  std::optional<int64_t> update_freq;
  // Keras's profile_batch: the training batches {first, last} (counted from 1 across the
  // epochs; {N, N} for one) recorded with the step profiler into
  // log_dir/train/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json, a Chrome trace
  // that Perfetto and chrome://tracing open (TensorBoard's own profile plugin reads
  // TensorFlow's XPlane files, which chorus does not write). {0, 0}: no profiling.
  std::pair<int64_t, int64_t> profile_batch{0, 0};
};

// In log_dir/train: epoch_<name> for each training log (epoch_loss, epoch_<metric>) and
// epoch_learning_rate (the optimizer's rate for the next step), at step = epoch (0-based);
// with update_freq, batch_<name> at step = the batch's 1-based number in the fit. In
// log_dir/validation: epoch_<name> for each val_<name> at step = epoch, and after each
// evaluation evaluation_<name>_vs_iterations at step = optimizer iterations. Each fit
// opens new files (events.out.tfevents.<secs>.<host>.<pid>.<n>.v2), flushed after each
// epoch and closed at the end of training. In a multi-worker job only rank 0 writes.
// With profile_batch, the batches it names as a Chrome trace (see TensorBoardOptions).
// Keras's histogram, graph, image and embedding options are not supported.
//
//   model.fit(train, {.epochs = 5, .validation_data = test, .callbacks = {TensorBoard("logs")}});
class TensorBoard : public models::Callback {
 public:
  // Throws ValueError for an empty log_dir, update_freq < 1, or a profile_batch other than
  // {0, 0} or 1 <= first <= last.
  explicit TensorBoard(std::string log_dir = "logs", TensorBoardOptions options = {});
  ~TensorBoard() override;
  TensorBoard(TensorBoard&&) noexcept;
  TensorBoard& operator=(TensorBoard&&) noexcept;

  // Opens log_dir/train. Throws IOError naming the directory when it cannot be created.
  void on_train_begin(const models::Logs& logs) override;
  void on_train_end(const models::Logs& logs) override;
  void on_epoch_end(int epoch, const models::Logs& logs) override;
  void on_train_batch_begin(int64_t batch, const models::Logs& logs) override;
  void on_train_batch_end(int64_t batch, const models::Logs& logs) override;
  void on_test_end(const models::Logs& logs) override;
  bool implements_train_batch_hooks() const override {
    return options_.update_freq.has_value() || options_.profile_batch.first > 0;
  }
  bool implements_test_batch_hooks() const override { return false; }

  const std::string& log_dir() const { return log_dir_; }
  const TensorBoardOptions& options() const { return options_; }

 private:
  io::EventFileWriter& train_writer();
  io::EventFileWriter& val_writer();
  void close_writers();

  std::string log_dir_;
  TensorBoardOptions options_;
  bool chief_ = true;
  int64_t global_train_batch_ = 0;
  std::unique_ptr<io::EventFileWriter> train_writer_;
  std::unique_ptr<io::EventFileWriter> val_writer_;
  std::unique_ptr<ProfileBatches> profile_;  // during a fit that profiles
};

}  // namespace chorus::callbacks
