// ProfileBatches: records training batches `first`..`last` with the step profiler and
// writes them as a Chrome trace (profiler/chrome_trace.h) — what TensorBoard's
// profile_batch and `chorus train --profile` use. One training thread; in a multi-worker
// job only rank 0 records, as only it writes TensorBoard's files.
#pragma once

#include <cstdint>
#include <filesystem>

#include "chorus/models/callback.h"
#include "chorus/models/logs.h"

namespace chorus::callbacks {

class ProfileBatches : public models::Callback {
 public:
  // Batches count from 1 across the epochs of a fit (Keras's profile_batch). Throws
  // ValueError naming both unless 1 <= first <= last, and for an empty path.
  ProfileBatches(std::filesystem::path path, int64_t first, int64_t last);

  void on_train_begin(const models::Logs& logs) override;
  // Starts recording before batch `first`; throws ValueError when a profile is recording
  // already (one process records one profile at a time).
  void on_train_batch_begin(int64_t batch, const models::Logs& logs) override;
  // Stops after batch `last` and writes the file (IOError naming it when it cannot).
  void on_train_batch_end(int64_t batch, const models::Logs& logs) override;
  // A fit that ends inside the range writes what it recorded; one that ends before it
  // writes nothing and says so on stderr.
  void on_train_end(const models::Logs& logs) override;

  const std::filesystem::path& path() const { return path_; }

 private:
  void finish();

  std::filesystem::path path_;
  int64_t first_, last_;
  int64_t batch_ = 0;  // of the fit, from 1
  bool chief_ = true;
  bool recording_ = false;
};

}  // namespace chorus::callbacks
