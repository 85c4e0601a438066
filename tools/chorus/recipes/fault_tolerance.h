// What every `chorus train` recipe takes for fault tolerance: BackupAndRestore into a
// directory (--backup-dir, --backup-every) and the final weights as one safetensors file
// (--save-weights). Header-only glue between the CLI options and the library; plain values, no state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/callbacks/backup_and_restore.h"
#include "chorus/core/shared.h"
#include "chorus/models/model.h"

namespace chorus::recipes {

struct FaultToleranceOptions {
  // Backs the fit up there and, started again after a crash, resumes from the latest
  // backup. Empty: no backups.
  std::string backup_dir;
  // Training batches between backups; 0: at the end of every epoch.
  int64_t backup_every = 0;
  // Writes the trained weights there (Model::save_weights). Empty: not written.
  std::string save_weights;
};

// `callbacks` with BackupAndRestore added when options.backup_dir is set.
inline std::vector<Shared<models::Callback>> with_backup(std::vector<Shared<models::Callback>> callbacks,
                                                         const FaultToleranceOptions& options) {
  if (options.backup_dir.empty()) return callbacks;
  callbacks.push_back(callbacks::BackupAndRestore(
      options.backup_dir,
      {.save_freq = options.backup_every > 0 ? std::optional<int64_t>(options.backup_every) : std::nullopt}));
  return callbacks;
}

inline void save_final_weights(const models::Model& model, const FaultToleranceOptions& options) {
  if (!options.save_weights.empty()) model.save_weights(options.save_weights);
}

}  // namespace chorus::recipes
