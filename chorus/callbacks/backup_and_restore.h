// BackupAndRestore: backs up a fit every epoch or every N batches and, when fit is
// started again after a crash, continues it from the last backup (Keras's
// BackupAndRestore) — mid-epoch, at the same batch, with the final weights equal to the
// uninterrupted run's bit for bit. One training thread; in a multi-worker job every
// worker passes one and rank 0 writes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <future>
#include <optional>

#include "chorus/models/callback.h"

namespace chorus::callbacks {

struct BackupAndRestoreOptions {
  // nullopt: at the end of every epoch (Keras's "epoch"); N: after every N training
  // batches, counted across epochs.
  std::optional<int64_t> save_freq;
  // Removes the backups when fit ends normally (not when it throws or the process dies).
  bool delete_checkpoint = true;
};

// `backup_dir` holds the last two backups, `backup-<steps>/` (a directory written
// atomically: weights, optimizer state, callback tensors and fit_state.json with the
// epoch, batch, data position, metrics, learning rate, dropout streams, callback states
// and every file's SHA-256). A resumed fit takes the newest intact one; a damaged one
// (checksum, truncation) is reported on stderr and the previous one used. In one process
// a backup is copied out of the model at its step and written by a background thread
// while training goes on (one at a time; a failed write is rethrown at the next backup
// or at the end of fit); a multi-worker job writes on rank 0 while the others wait.
// Where a weight or optimizer slot is split over devices or workers, every rank writes
// its shards (sharded_checkpoint.h) while training waits.
//
//   model.fit(train, {.epochs = 10, .callbacks = {BackupAndRestore("/tmp/backup", {.save_freq = 50})}});
//
// Restoring throws ValueError when the backup belongs to another model (naming the
// first weight that differs), another set of stateful callbacks, or a newer backup
// format; IOError when every backup is damaged. fit builds an unbuilt model on its
// data's first batch before on_train_begin, as Keras does, so a subclassed model restores.
class BackupAndRestore : public models::Callback {
 public:
  // Throws ValueError for save_freq < 1 or an empty backup_dir.
  explicit BackupAndRestore(std::filesystem::path backup_dir, BackupAndRestoreOptions options = {});

  void on_train_begin(const models::Logs& logs) override;
  void on_train_batch_end(int64_t batch, const models::Logs& logs) override;
  void on_epoch_end(int epoch, const models::Logs& logs) override;
  void on_train_end(const models::Logs& logs) override;
  bool implements_train_batch_hooks() const override { return options_.save_freq.has_value(); }
  bool implements_test_batch_hooks() const override { return false; }
  bool runs_after_others() const override { return true; }

  const std::filesystem::path& backup_dir() const { return backup_dir_; }

 private:
  void backup();
  // Waits for the backup being written in the background, rethrowing its error.
  void wait_for_pending();

  std::filesystem::path backup_dir_;
  BackupAndRestoreOptions options_;
  int64_t total_steps_ = 0;
  std::future<void> pending_;  // the background write (one process only)
};

}  // namespace chorus::callbacks
