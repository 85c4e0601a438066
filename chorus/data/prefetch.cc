// prefetch(n): one producer thread per iterator pulls from the input into a bounded
// queue of n elements while the consumer works, so a producer that costs no more than
// the consumer per element is hidden. The thread starts on the first next() and is
// stopped and joined when the iterator is destroyed or restored (no leak, no hang
// unless the input itself hangs). Errors travel through the queue in order. Blocking
// uses condition variables, never spinning.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "chorus/data/dataset_impl.h"
#include "chorus/profiler/profiler.h"

namespace chorus::data {
namespace {

class PrefetchDataset final : public UnaryDataset {
 public:
  PrefetchDataset(DatasetPtr input, int64_t buffer_size) : UnaryDataset(std::move(input)), buffer_size_(buffer_size) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "prefetch"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<PrefetchDataset>(std::move(input), buffer_size_);
  }
  size_t buffer_size() const { return static_cast<size_t>(buffer_size_); }
  // A producer that filled the queue sleeps until it drains to this many, so that with
  // larger buffers one wake-up (a system call, and on a VM an inter-processor interrupt
  // costing several microseconds) serves several elements.
  size_t refill_at() const { return buffer_size() - std::max<size_t>(1, buffer_size() / 2); }

 private:
  int64_t buffer_size_;
};

class PrefetchIterator final : public IteratorImpl {
 public:
  PrefetchIterator(std::shared_ptr<const PrefetchDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), epoch_(epoch), input_(ds_->input().make_iterator(epoch)) {}
  ~PrefetchIterator() override { stop(); }

  std::optional<Tree> next() override {
    if (ended_) return std::nullopt;
    if (!producer_.joinable()) producer_ = std::thread([this] { produce(); });
    Item item;
    bool wake = false;
    {
      std::unique_lock lock(mutex_);
      not_empty_.wait(lock, [&] { return !queue_.empty(); });
      item = std::move(queue_.front());
      queue_.pop_front();
      wake = producer_waiting_ && queue_.size() <= ds_->refill_at();
    }
    if (wake) not_full_.notify_one();
    if (item.error) std::rethrow_exception(item.error);
    if (!item.element) {
      ended_ = true;
      return std::nullopt;
    }
    ++count_;
    return std::move(item.element);
  }

  // The consumer's place: elements returned so far. The producer's read-ahead is
  // discarded on restore and read again.
  nlohmann::json position() const override { return {{"op", "prefetch"}, {"count", count_}, {"ended", ended_}}; }

  void restore(const nlohmann::json& state) override {
    check_op(state, "prefetch");
    const int64_t count = state.at("count").get<int64_t>();
    const bool ended = state.at("ended").get<bool>();
    stop();
    input_ = replay_input(ds_->input(), epoch_, count, "prefetch");
    count_ = count;
    ended_ = ended;
  }

 private:
  // A queued element; an empty element without error marks the end of the input.
  struct Item {
    std::optional<Tree> element;
    std::exception_ptr error;
  };

  // The producer thread: the only user of input_ while it runs.
  void produce() {
    while (true) {
      {
        std::unique_lock lock(mutex_);
        if (queue_.size() >= ds_->buffer_size()) {
          producer_waiting_ = true;
          not_full_.wait(lock, [&] { return stop_ || queue_.size() <= ds_->refill_at(); });
          producer_waiting_ = false;
        }
        if (stop_) return;
      }
      Item item;
      try {
        profiler::Scope event("data", "prefetch");
        item.element = input_->next();
      } catch (...) {
        item.error = std::current_exception();
      }
      const bool end = !item.element && !item.error;
      {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(item));
      }
      not_empty_.notify_one();
      if (end) return;
    }
  }

  // Stops and joins the producer and drops its read-ahead.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    not_full_.notify_all();
    if (producer_.joinable()) producer_.join();
    queue_.clear();
    stop_ = false;
  }

  std::shared_ptr<const PrefetchDataset> ds_;
  int64_t epoch_;
  std::unique_ptr<IteratorImpl> input_;  // owned by the producer thread while it runs
  int64_t count_ = 0;                    // elements returned (consumer thread only)
  bool ended_ = false;

  std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<Item> queue_;  // guarded by mutex_
  bool stop_ = false;       // guarded by mutex_
  bool producer_waiting_ = false;  // guarded by mutex_: blocked on a full queue
  std::thread producer_;
};

std::unique_ptr<IteratorImpl> PrefetchDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<PrefetchIterator>(shared_self(this), epoch);
}

}  // namespace

DatasetPtr make_prefetch_dataset(DatasetPtr input, int64_t buffer_size) {
  return std::make_shared<PrefetchDataset>(std::move(input), buffer_size);
}

}  // namespace chorus::data
