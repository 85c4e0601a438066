// The files of one fit backup (BackupAndRestore's `backup-<steps>/` directories): the
// model's weights, the optimizer's state, the callbacks' tensors and fit_state.json,
// which holds the FitState and every other file's SHA-256. Written atomically by one
// process; read back only when intact. Free functions, no state.
#pragma once

#include <cstdint>
#include <filesystem>
#include <utility>
#include <vector>

#include "chorus/core/error.h"
#include "chorus/io/safetensors.h"
#include "chorus/models/fit_state.h"

namespace chorus::cluster {
class WorkerGroup;
}

namespace chorus::models {
class Model;
}

namespace chorus::callbacks {

// The format version this build writes and the newest it reads.
inline constexpr int kBackupFormatVersion = 1;

// A backup whose files are missing, truncated or fail their checksum: BackupAndRestore
// falls back to the previous backup.
class DamagedBackupError : public IOError {
 public:
  using IOError::IOError;
};

// What a backup holds, copied out of the model when it is taken, so that another thread
// may write it while training goes on.
struct BackupSnapshot {
  std::string model_name;
  std::vector<std::string> signature;  // each weight's object path, shape and dtype
  io::NamedTensors weights, optimizer;   // keyed by object paths (models/object_paths.h)
  models::FitState state;
};
BackupSnapshot take_backup_snapshot(const models::Model& model, models::FitState state,
                                    cluster::WorkerGroup* workers);

// Writes `snapshot` as the backup `dir` (atomically: a crash leaves the old `dir` or
// none). Throws IOError.
void write_backup(const std::filesystem::path& dir, const BackupSnapshot& snapshot);

// Whether some weight or optimizer slot of `model` is split over devices or workers: its
// backups are then written in shards, by every rank, while training waits (a copy for a
// writer thread would double each rank's memory).
bool backs_up_in_shards(const models::Model& model);
// Writes the backup `dir` of `model` after `state` in shards (atomically, as write_backup
// does). Every rank of `workers` (nullptr: this process alone) calls it. Throws IOError.
void write_backup_in_shards(const std::filesystem::path& dir, const models::Model& model,
                            const models::FitState& state, cluster::WorkerGroup* workers);

// The backups in `backup_dir` as (steps, path), the newest (most steps) first; empty
// when the directory does not exist.
std::vector<std::pair<int64_t, std::filesystem::path>> list_backups(const std::filesystem::path& backup_dir);
// The directory name of the backup after `steps` training steps.
std::string backup_name(int64_t steps);

// Checks the backup `dir` (every file's SHA-256, then that it is `model`'s), assigns its
// weights and optimizer state to `model` and returns its FitState. Throws
// DamagedBackupError naming the file for a damaged backup, ValueError naming the first
// difference for another model's, or a format version newer than this build reads.
models::FitState read_backup(const std::filesystem::path& dir, models::Model& model);

}  // namespace chorus::callbacks
