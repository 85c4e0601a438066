// What every `chorus train` recipe takes beyond its own settings: fault tolerance
// (BackupAndRestore into --backup-dir every --backup-every batches, the final weights as
// one safetensors file with --save-weights), the step profiler (--profile,
// --profile-batches) and compiled steps (--jit-compile). Header-only glue between the CLI
// options and the library; plain values, no state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/callbacks/backup_and_restore.h"
#include "chorus/callbacks/profile_batches.h"
#include "chorus/core/shared.h"
#include "chorus/models/model.h"

namespace chorus::recipes {

struct RunOptions {
  // Backs the fit up there and, started again after a crash, resumes from the latest
  // backup. Empty: no backups.
  std::string backup_dir;
  // Training batches between backups; 0: at the end of every epoch.
  int64_t backup_every = 0;
  // Writes the trained weights there (Model::save_weights). Empty: not written.
  std::string save_weights;
  // Writes training batches profile_first..profile_last (from 1, across epochs) there as a
  // Chrome trace (callbacks::ProfileBatches). Empty: no profile.
  std::string profile;
  int64_t profile_first = 10;
  int64_t profile_last = 20;
  // Keras's model.jit_compile = True: compiled steps (on one device and each data-parallel
  // replica).
  bool jit_compile = false;
};

// `callbacks` with BackupAndRestore added when options.backup_dir is set, and
// ProfileBatches when options.profile is.
inline std::vector<Shared<models::Callback>> with_run_callbacks(std::vector<Shared<models::Callback>> callbacks,
                                                                const RunOptions& options) {
  if (!options.profile.empty()) {
    callbacks.push_back(callbacks::ProfileBatches(options.profile, options.profile_first, options.profile_last));
  }
  if (options.backup_dir.empty()) return callbacks;
  callbacks.push_back(callbacks::BackupAndRestore(
      options.backup_dir,
      {.save_freq = options.backup_every > 0 ? std::optional<int64_t>(options.backup_every) : std::nullopt}));
  return callbacks;
}

// Sets model.jit_compile when options ask for it.
inline void apply_jit_compile(models::Model& model, const RunOptions& options) {
  if (options.jit_compile) model.set_jit_compile(true);
}

inline void save_final_weights(const models::Model& model, const RunOptions& options) {
  if (!options.save_weights.empty()) model.save_weights(options.save_weights);
}

}  // namespace chorus::recipes
