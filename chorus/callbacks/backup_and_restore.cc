#include "chorus/callbacks/backup_and_restore.h"

#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chorus/callbacks/backup_files.h"
#include "chorus/cluster/worker_group.h"
#include "chorus/core/error.h"
#include "chorus/distribution/distribution.h"
#include "chorus/io/atomic_file.h"
#include "chorus/models/model.h"

namespace chorus::callbacks {
namespace {

namespace fs = std::filesystem;

// Backups kept: the newest, and the one before it in case the newest turns out damaged.
constexpr size_t kBackupsKept = 2;

cluster::WorkerGroup* workers_of(const models::Model& model) {
  return model.distribution() ? model.distribution()->workers().get() : nullptr;
}

// Removes what crashed writers and removals left in `backup_dir`, whichever backup they were of.
void remove_dead_temporaries(const fs::path& backup_dir) {
  if (!fs::is_directory(backup_dir)) return;
  std::error_code ec;
  for (const io::AtomicTemporary& t : io::list_atomic_temporaries(backup_dir)) {
    if (!t.alive) fs::remove_all(t.path, ec);
  }
}

// Runs `write` on rank 0 of a multi-worker job (the others wait for it), or here alone.
void on_chief(const models::Model& model, const std::function<void()>& write) {
  if (cluster::WorkerGroup* workers = workers_of(model)) {
    workers->on_chief_then_barrier(write);
  } else {
    write();
  }
}

}  // namespace

BackupAndRestore::BackupAndRestore(fs::path backup_dir, BackupAndRestoreOptions options)
    : backup_dir_(std::move(backup_dir)), options_(options) {
  if (backup_dir_.empty()) throw_error<ValueError>("BackupAndRestore: expected a backup_dir, got an empty path");
  if (options_.save_freq && *options_.save_freq < 1) {
    throw_error<ValueError>(
        "BackupAndRestore: expected save_freq >= 1 batches or nullopt (every epoch). Received: save_freq={}",
        *options_.save_freq);
  }
}

void BackupAndRestore::on_train_begin(const models::Logs& /*logs*/) {
  wait_for_pending();
  total_steps_ = 0;
  auto backups = list_backups(backup_dir_);
  // Every worker restores what rank 0 sees as the newest backup (or nothing).
  if (cluster::WorkerGroup* workers = workers_of(model())) {
    const uint64_t none = std::numeric_limits<uint64_t>::max();
    const uint64_t newest = workers->chief_value(backups.empty() ? none : static_cast<uint64_t>(backups[0].first));
    std::erase_if(backups, [&](const auto& b) { return newest == none || static_cast<uint64_t>(b.first) > newest; });
  }
  if (backups.empty()) return;
  if (!model().built()) {
    throw_error<ValueError>("BackupAndRestore: model '{}' must be built before fit to restore {}; call it on a batch first",
                            model().name(), backups[0].second.string());
  }
  std::vector<std::string> damaged;
  for (const auto& backup : backups) {
    const fs::path& dir = backup.second;
    try {
      models::FitState state = read_backup(dir, model());
      total_steps_ = state.total_steps;
      if (params().verbose > 0) {
        std::cout << fmt::format("BackupAndRestore: resuming from {} (epoch {}, batch {})\n", dir.string(),
                                 state.epoch + 1, state.step);
      }
      fit().resume_fit(std::move(state));
      return;
    } catch (const DamagedBackupError& e) {
      std::cerr << "BackupAndRestore: warning: " << e.what() << "; trying the previous backup\n";
      damaged.emplace_back(e.what());
    }
  }
  throw_error<IOError>("BackupAndRestore: every backup in {} is damaged: {}", backup_dir_.string(),
                       fmt::join(damaged, "; "));
}

void BackupAndRestore::on_train_batch_end(int64_t /*batch*/, const models::Logs& /*logs*/) {
  ++total_steps_;
  if (options_.save_freq && total_steps_ % *options_.save_freq == 0) backup();
}

void BackupAndRestore::on_epoch_end(int /*epoch*/, const models::Logs& /*logs*/) {
  if (!options_.save_freq) backup();
}

void BackupAndRestore::on_train_end(const models::Logs& /*logs*/) {
  wait_for_pending();
  if (!options_.delete_checkpoint) return;
  on_chief(model(), [&] {
    for (const auto& backup : list_backups(backup_dir_)) io::remove_atomically(backup.second);
    remove_dead_temporaries(backup_dir_);
    std::error_code ec;
    fs::remove(backup_dir_, ec);  // only when empty: the user's other files stay
  });
}

void BackupAndRestore::backup() {
  models::FitState state = fit().fit_state();
  const fs::path dir = backup_dir_ / backup_name(state.total_steps);
  const auto make_backup_dir = [backup_dir = backup_dir_] {
    std::error_code ec;
    fs::create_directories(backup_dir, ec);
    if (ec) throw_error<IOError>("BackupAndRestore: cannot create {}: {}", backup_dir.string(), ec.message());
  };
  const auto remove_old_backups = [backup_dir = backup_dir_] {
    const auto backups = list_backups(backup_dir);
    for (size_t i = kBackupsKept; i < backups.size(); ++i) io::remove_atomically(backups[i].second);
    remove_dead_temporaries(backup_dir);
  };
  auto write = [=](const BackupSnapshot& snapshot) {
    make_backup_dir();
    write_backup(dir, snapshot);
    remove_old_backups();
  };
  cluster::WorkerGroup* workers = workers_of(model());
  if (backs_up_in_shards(model())) {
    wait_for_pending();
    make_backup_dir();
    write_backup_in_shards(dir, model(), state, workers);
    on_chief(model(), remove_old_backups);
    return;
  }
  if (workers != nullptr) {
    // Every worker gathers the rows of the tables split across them; rank 0 writes.
    const BackupSnapshot snapshot = take_backup_snapshot(model(), std::move(state), workers);
    on_chief(model(), [&] { write(snapshot); });
    return;
  }
  wait_for_pending();
  auto snapshot = std::make_shared<const BackupSnapshot>(take_backup_snapshot(model(), std::move(state), nullptr));
  pending_ = std::async(std::launch::async, [write, snapshot] { write(*snapshot); });
}

void BackupAndRestore::wait_for_pending() {
  if (pending_.valid()) pending_.get();
}

}  // namespace chorus::callbacks
