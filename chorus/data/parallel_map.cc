// map with num_parallel_calls > 1: a pool of worker threads owned by the iterator runs
// fn on a window of up to 2 x workers elements read ahead from the input (on the
// consumer's thread, so the input stays single-threaded); results come out in input
// order, and an exception from fn (or the input) surfaces at its element's place. The
// pool starts on the first next() and is stopped and joined on destruction or restore.
// Blocking uses condition variables, never spinning.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/data/dataset_impl.h"
#include "chorus/profiler/profiler.h"

namespace chorus::data {
namespace {

class ParallelMapDataset final : public UnaryDataset {
 public:
  ParallelMapDataset(DatasetPtr input, PositionedMapFn fn, int num_workers)
      : UnaryDataset(std::move(input)), fn_(std::move(fn)), num_workers_(num_workers) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "map"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<ParallelMapDataset>(std::move(input), fn_, num_workers_);
  }
  Tree apply(const Tree& element, const ElementPosition& position) const {
    const backend::cpu::IntraOpThreadsScope one_thread(1);  // see Dataset::map
    return fn_(element, position);
  }
  int num_workers() const { return num_workers_; }

 private:
  PositionedMapFn fn_;
  int num_workers_;
};

class ParallelMapIterator final : public IteratorImpl {
 public:
  ParallelMapIterator(std::shared_ptr<const ParallelMapDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), epoch_(epoch), input_(ds_->input().make_iterator(epoch)) {}
  ~ParallelMapIterator() override { stop(); }

  std::optional<Tree> next() override {
    if (workers_.empty()) start();
    top_up();
    Slot slot;
    {
      std::unique_lock lock(mutex_);
      if (window_.empty()) return std::nullopt;
      ready_.wait(lock, [&] { return window_.front().ready; });
      slot = std::move(window_.front());
      window_.pop_front();
    }
    ++count_;
    if (slot.error) std::rethrow_exception(slot.error);
    return std::move(slot.result);
  }

  int64_t advance(int64_t n) override {
    if (!window_.empty()) return IteratorImpl::advance(n);
    const int64_t skipped = input_->advance(n);  // nothing read ahead: skip without fn
    count_ += skipped;
    return skipped;
  }

  // Outputs so far; the read-ahead is dropped on restore and read again.
  nlohmann::json position() const override { return {{"op", "map"}, {"count", count_}}; }

  void restore(const nlohmann::json& state) override {
    check_op(state, "map");
    stop();
    count_ = state.at("count").get<int64_t>();
    input_done_ = false;
    if (state.contains("input")) {  // saved by a sequential map
      input_->restore(state["input"]);
    } else {
      input_ = replay_input(ds_->input(), epoch_, count_, "map");
    }
  }

 private:
  // One element in flight, in input order. Workers write result/error/ready under mutex_.
  struct Slot {
    std::optional<Tree> input;
    ElementPosition position;
    std::optional<Tree> result;
    std::exception_ptr error;
    bool ready = false;
  };

  void start() {
    for (int i = 0; i < ds_->num_workers(); ++i) workers_.emplace_back([this] { work(); });
  }

  // Reads input elements into the window until it is full; an input error becomes a
  // ready slot so it surfaces in order.
  void top_up() {
    const size_t window = 2 * static_cast<size_t>(ds_->num_workers());
    while (!input_done_) {
      {
        std::lock_guard lock(mutex_);
        if (window_.size() >= window) return;
      }
      Slot slot;
      try {
        slot.input = input_->next();
        if (!slot.input) {
          input_done_ = true;
          return;
        }
      } catch (...) {
        slot.error = std::current_exception();
        slot.ready = true;
      }
      {
        std::lock_guard lock(mutex_);
        // Every slot before this one is in the window or was returned (count_).
        slot.position = {.epoch = epoch_, .index = count_ + static_cast<int64_t>(window_.size())};
        window_.push_back(std::move(slot));
        if (!window_.back().ready) tasks_.push_back(&window_.back());
      }
      tasks_ready_.notify_one();
    }
  }

  void work() {
    while (true) {
      Slot* slot;
      {
        std::unique_lock lock(mutex_);
        tasks_ready_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (stop_) return;
        slot = tasks_.front();
        tasks_.pop_front();
      }
      std::optional<Tree> result;
      std::exception_ptr error;
      try {
        profiler::Scope event("data", "map");
        result = ds_->apply(*slot->input, slot->position);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        slot->input.reset();
        slot->result = std::move(result);
        slot->error = error;
        slot->ready = true;
      }
      ready_.notify_one();
    }
  }

  // Stops and joins the workers (each finishes the fn call it is in) and drops the window.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    tasks_ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
    tasks_.clear();
    window_.clear();
    stop_ = false;
  }

  std::shared_ptr<const ParallelMapDataset> ds_;
  int64_t epoch_;
  std::unique_ptr<IteratorImpl> input_;  // consumer thread only
  bool input_done_ = false;
  int64_t count_ = 0;  // elements returned

  std::mutex mutex_;
  std::condition_variable tasks_ready_, ready_;
  std::deque<Slot> window_;   // guarded by mutex_; deque keeps Slot addresses stable
  std::deque<Slot*> tasks_;   // guarded by mutex_: slots whose fn has not started
  bool stop_ = false;         // guarded by mutex_
  std::vector<std::thread> workers_;
};

std::unique_ptr<IteratorImpl> ParallelMapDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<ParallelMapIterator>(shared_self(this), epoch);
}

}  // namespace

DatasetPtr make_parallel_map_dataset(DatasetPtr input, PositionedMapFn fn, int num_workers) {
  if (num_workers == kAutotune) num_workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::make_shared<ParallelMapDataset>(std::move(input), std::move(fn), num_workers);
}

}  // namespace chorus::data
