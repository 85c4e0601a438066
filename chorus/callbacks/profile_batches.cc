#include "chorus/callbacks/profile_batches.h"

#include <iostream>

#include "chorus/core/error.h"
#include "chorus/distribution/initialize.h"
#include "chorus/profiler/chrome_trace.h"
#include "chorus/profiler/profiler.h"

namespace chorus::callbacks {

ProfileBatches::ProfileBatches(std::filesystem::path path, int64_t first, int64_t last)
    : path_(std::move(path)), first_(first), last_(last) {
  if (path_.empty()) throw ValueError("ProfileBatches: expected a file to write the profile to");
  if (first_ < 1 || last_ < first_) {
    throw_error<ValueError>(
        "ProfileBatches: expected a range of batches 1 <= first <= last (counted from 1 across epochs). Received: "
        "first={}, last={}",
        first_, last_);
  }
}

void ProfileBatches::on_train_begin(const models::Logs& /*logs*/) {
  chief_ = distribution::is_chief();
  batch_ = 0;
}

void ProfileBatches::on_train_batch_begin(int64_t /*batch*/, const models::Logs& /*logs*/) {
  if (++batch_ != first_ || !chief_) return;
  profiler::start();
  recording_ = true;
}

void ProfileBatches::on_train_batch_end(int64_t /*batch*/, const models::Logs& /*logs*/) {
  if (recording_ && batch_ >= last_) finish();
}

void ProfileBatches::on_train_end(const models::Logs& /*logs*/) {
  if (recording_) {
    finish();
  } else if (chief_ && batch_ < first_) {
    std::cerr << "ProfileBatches: training ended after " << batch_ << " batches, before batch " << first_
              << "; no profile written to " << path_.string() << "\n";
  }
}

void ProfileBatches::finish() {
  recording_ = false;
  const std::vector<profiler::Event> events = profiler::stop();
  std::error_code error;
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), error);
  if (error) throw_error<IOError>("ProfileBatches: cannot create {}: {}", path_.parent_path().string(), error.message());
  profiler::write_chrome_trace(events, path_);
}

}  // namespace chorus::callbacks
