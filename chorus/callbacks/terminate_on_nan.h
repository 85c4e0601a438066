// TerminateOnNaN: ends fit when a batch's loss is NaN or infinite (Keras's
// TerminateOnNaN). One training thread.
#pragma once

#include <cstdint>

#include "chorus/models/callback.h"
#include "chorus/models/logs.h"

namespace chorus::callbacks {

struct TerminateOnNaNOptions {
  // false: prints "Batch 3: Invalid loss, terminating training" and sets
  // Model::stop_training (fit ends after this batch, on_train_end still runs).
  // true: throws chorus::Error at once, so no other on_train_end runs.
  bool raise_error = false;
};

class TerminateOnNaN : public models::Callback {
 public:
  explicit TerminateOnNaN(TerminateOnNaNOptions options = {}) : options_(options) {}

  // Reads logs["loss"] (a batch without one is ignored).
  void on_train_batch_end(int64_t batch, const models::Logs& logs) override;

 private:
  TerminateOnNaNOptions options_;
};

}  // namespace chorus::callbacks
