// cache(): the first complete pass over the input is recorded, in memory or in a file
// (cache_file.h), and every later pass of any epoch replays it without touching the
// input. An iterator decides when it is made: if a recording exists it serves from it,
// else it records while passing elements through, and publishes the recording only when
// its pass ends (or reaches the input's known cardinality). A partial pass is dropped.
//
// The in-memory recording is shared by every iterator of the dataset, which may run on
// several threads: it is published once under a mutex as an immutable snapshot, so
// serving iterators read it without locking.
#include <algorithm>
#include <filesystem>
#include <mutex>

#include "chorus/data/cache_file.h"
#include "chorus/data/dataset_impl.h"

namespace chorus::data {
namespace {

// One finished in-memory pass.
struct Recording {
  std::vector<Tree> elements;
  int64_t epoch = 0;  // the input pass it came from
};

class CacheDataset final : public UnaryDataset {
 public:
  CacheDataset(DatasetPtr input, std::string path)
      : UnaryDataset(std::move(input)),
        path_(std::move(path)),
        file_(path_.empty() ? "" : (std::filesystem::path(path_) / "elements.chorus-cache").string()) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "cache"; }
  // A new stage: its recording starts empty, whatever this one has recorded.
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<CacheDataset>(std::move(input), path_);
  }
  std::string cache_path() const override { return path_; }
  DatasetPtr with_cache_path(std::string path) const override {
    return std::make_shared<CacheDataset>(input_, std::move(path));
  }

  bool in_memory() const { return file_.empty(); }
  const std::string& file() const { return file_; }
  bool file_exists() const { return !file_.empty() && std::filesystem::exists(file_); }
  std::unique_ptr<CacheFileReader> open() const {
    return std::make_unique<CacheFileReader>(file_, input_->describe());
  }

  std::shared_ptr<const Recording> recording() const {
    std::lock_guard lock(mutex_);
    return recording_;
  }
  // Publishes `recording` unless another pass got there first.
  void publish(std::shared_ptr<const Recording> recording) const {
    std::lock_guard lock(mutex_);
    if (!recording_) recording_ = std::move(recording);
  }

 private:
  std::string path_;  // as given to cache(path)
  std::string file_;  // empty: cache in memory
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const Recording> recording_;  // guarded by mutex_; null until a pass completes
};

class CacheIterator final : public IteratorImpl {
 public:
  CacheIterator(std::shared_ptr<const CacheDataset> ds, int64_t epoch) : ds_(std::move(ds)), epoch_(epoch) {}

  std::optional<Tree> next() override {
    if (!started_) start();
    if (recording_) {
      if (index_ >= static_cast<int64_t>(recording_->elements.size())) return std::nullopt;
      return recording_->elements[index_++];
    }
    if (reader_) return reader_->next();
    return record_next();
  }

  int64_t advance(int64_t n) override {
    if (!started_) start();
    if (!recording_) return IteratorImpl::advance(n);
    const int64_t skipped = std::clamp<int64_t>(static_cast<int64_t>(recording_->elements.size()) - index_, 0, n);
    index_ += skipped;
    return skipped;
  }

  nlohmann::json position() const override {
    if (!started_) return {{"op", "cache"}, {"mode", "start"}};
    if (recording_) return {{"op", "cache"}, {"mode", "serve"}, {"epoch", recording_->epoch}, {"index", index_}};
    if (reader_) {
      return {{"op", "cache"}, {"mode", "serve"}, {"epoch", reader_->epoch()}, {"index", reader_->index()},
              {"offset", reader_->offset()}};
    }
    return {{"op", "cache"}, {"mode", "record"}, {"epoch", epoch_}, {"index", recorded_}, {"done", done_}};
  }

  void restore(const nlohmann::json& state) override {
    check_op(state, "cache");
    const std::string mode = state.at("mode").get<std::string>();
    if (mode == "start") {
      reset();
      return;
    }
    const int64_t epoch = state.at("epoch").get<int64_t>();
    const int64_t index = state.at("index").get<int64_t>();
    if (mode == "serve") {
      restore_serving(epoch, index, state.contains("offset") ? state["offset"].get<uint64_t>() : 0);
    } else if (mode == "record") {
      // Re-record the elements before the position: the recording must hold the whole pass.
      epoch_ = epoch;
      begin_recording();
      if (IteratorImpl::advance(index) != index) {
        throw_error<ValueError>("cache: cannot restore to element {} of pass {}: the input ended after {}", index,
                                epoch, recorded_);
      }
      if (state.at("done").get<bool>()) finish();  // the pass had ended: publish it
    } else {
      throw_error<ValueError>("cache: cannot restore a position in mode '{}' (expected 'start', 'serve' or 'record')",
                              mode);
    }
  }

 private:
  // Back to before the first next().
  void reset() {
    started_ = false;
    recording_.reset();
    reader_.reset();
    input_.reset();
    pending_.clear();
    writer_.reset();
    index_ = recorded_ = 0;
    done_ = false;
  }

  // Serves from an existing recording, else starts recording this pass. On the first
  // next(), so that making an iterator does no I/O.
  void start() {
    started_ = true;
    if (ds_->in_memory()) {
      recording_ = ds_->recording();
    } else if (ds_->file_exists()) {
      reader_ = ds_->open();
    }
    if (!recording_ && !reader_) begin_recording();
  }

  void begin_recording() {
    started_ = true;
    recording_.reset();
    reader_.reset();
    input_ = ds_->input().make_iterator(epoch_);
    pending_.clear();
    writer_.reset();
    if (!ds_->in_memory()) writer_ = std::make_unique<CacheFileWriter>(ds_->file(), ds_->input().describe(), epoch_);
    recorded_ = 0;
    done_ = false;
  }

  std::optional<Tree> record_next() {
    if (done_) return std::nullopt;
    std::optional<Tree> element = input_->next();
    if (!element) {
      finish();
      return std::nullopt;
    }
    if (writer_) {
      writer_->write(*element);
    } else {
      pending_.push_back(*element);
    }
    ++recorded_;
    // A consumer that stops after the known last element never asks for the end.
    if (recorded_ == ds_->input().cardinality()) finish();
    return element;
  }

  void finish() {
    if (done_) return;
    done_ = true;
    if (writer_) {
      writer_->commit();
      writer_.reset();
    } else {
      auto recording = std::make_shared<Recording>();
      recording->elements = std::move(pending_);
      recording->epoch = epoch_;
      ds_->publish(std::move(recording));
    }
    pending_.clear();
  }

  // Serves from element `index` of the recording of pass `epoch`, making the recording
  // first when this process has none (a restore after a restart).
  void restore_serving(int64_t epoch, int64_t index, uint64_t offset) {
    const bool have = ds_->in_memory() ? ds_->recording() != nullptr : ds_->file_exists();
    if (!have) {
      epoch_ = epoch;
      begin_recording();
      while (record_next()) {
      }
    }
    reset();
    started_ = true;
    if (ds_->in_memory()) {
      recording_ = ds_->recording();
      if (index < 0 || index > static_cast<int64_t>(recording_->elements.size())) {
        throw_error<ValueError>("cache: cannot restore to element {} of a cache of {} elements", index,
                                recording_->elements.size());
      }
      index_ = index;
    } else {
      reader_ = ds_->open();
      if (offset == 0 && index == 0) offset = reader_->offset();
      reader_->seek(index, offset);
    }
  }

  std::shared_ptr<const CacheDataset> ds_;
  int64_t epoch_;
  bool started_ = false;
  // Serving from memory: the recording and the next index.
  std::shared_ptr<const Recording> recording_;
  int64_t index_ = 0;
  // Serving from a file.
  std::unique_ptr<CacheFileReader> reader_;
  // Recording: the input, the elements so far (memory) or the file being written.
  std::unique_ptr<IteratorImpl> input_;
  std::vector<Tree> pending_;
  std::unique_ptr<CacheFileWriter> writer_;
  int64_t recorded_ = 0;
  bool done_ = false;
};

std::unique_ptr<IteratorImpl> CacheDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<CacheIterator>(shared_self(this), epoch);
}

}  // namespace

DatasetPtr make_cache_dataset(DatasetPtr input, std::string path) {
  return std::make_shared<CacheDataset>(std::move(input), std::move(path));
}

}  // namespace chorus::data
