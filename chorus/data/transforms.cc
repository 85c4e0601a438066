// Element-wise and counting transforms: map (sequential), filter, take, skip, repeat,
// shard, enumerate. Each iterator owns its input's iterator and saves its state nested
// inside its own, so restoring costs no replay.
#include <algorithm>
#include <limits>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/data/dataset_impl.h"

namespace chorus::data {

std::unique_ptr<IteratorImpl> replay_input(const DatasetImpl& input, int64_t epoch, int64_t count, const char* op) {
  auto it = input.make_iterator(epoch);
  const int64_t skipped = it->advance(count);
  if (skipped != count) {
    throw_error<ValueError>(
        "{}: cannot restore to input element {}: pass {} of '{}' now ends after {} elements (is the input "
        "deterministic?)",
        op, count, epoch, input.describe(), skipped);
  }
  return it;
}

namespace {

// ---- map (num_parallel_calls == 1) ----

class MapDataset final : public UnaryDataset {
 public:
  MapDataset(DatasetPtr input, PositionedMapFn fn)
      : UnaryDataset(std::move(input)), fn_(std::move(fn)) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "map"; }
  DatasetPtr with_input(DatasetPtr input) const override { return std::make_shared<MapDataset>(std::move(input), fn_); }
  Tree apply(const Tree& element, const ElementPosition& position) const {
    const backend::cpu::IntraOpThreadsScope one_thread(1);  // see Dataset::map
    return fn_(element, position);
  }

 private:
  PositionedMapFn fn_;
};

class MapIterator final : public IteratorImpl {
 public:
  MapIterator(std::shared_ptr<const MapDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), epoch_(epoch), input_(ds_->input().make_iterator(epoch)) {}
  std::optional<Tree> next() override {
    std::optional<Tree> element = input_->next();
    if (!element) return std::nullopt;
    return ds_->apply(*element, ElementPosition{.epoch = epoch_, .index = count_++});
  }
  int64_t advance(int64_t n) override {
    const int64_t skipped = input_->advance(n);  // 1:1, so fn need not run
    count_ += skipped;
    return skipped;
  }
  nlohmann::json position() const override {
    return {{"op", "map"}, {"count", count_}, {"input", input_->position()}};
  }
  void restore(const nlohmann::json& state) override {
    check_op(state, "map");
    count_ = state.at("count").get<int64_t>();
    if (state.contains("input")) {
      input_->restore(state["input"]);
    } else {  // saved by a parallel map
      input_ = replay_input(ds_->input(), epoch_, count_, "map");
    }
  }

 private:
  std::shared_ptr<const MapDataset> ds_;
  int64_t epoch_;
  std::unique_ptr<IteratorImpl> input_;
  int64_t count_ = 0;
};

std::unique_ptr<IteratorImpl> MapDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<MapIterator>(shared_self(this), epoch);
}

// ---- filter ----

class FilterDataset final : public UnaryDataset {
 public:
  FilterDataset(DatasetPtr input, std::function<bool(const Tree&)> predicate)
      : UnaryDataset(std::move(input)), predicate_(std::move(predicate)) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override {
    return input_->cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  std::string name() const override { return "filter"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<FilterDataset>(std::move(input), predicate_);
  }
  bool keep(const Tree& element) const { return predicate_(element); }

 private:
  std::function<bool(const Tree&)> predicate_;
};

class FilterIterator final : public IteratorImpl {
 public:
  FilterIterator(std::shared_ptr<const FilterDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), input_(ds_->input().make_iterator(epoch)) {}
  std::optional<Tree> next() override {
    while (std::optional<Tree> element = input_->next()) {
      if (ds_->keep(*element)) return element;
    }
    return std::nullopt;
  }
  nlohmann::json position() const override { return {{"op", "filter"}, {"input", input_->position()}}; }
  void restore(const nlohmann::json& state) override {
    check_op(state, "filter");
    input_->restore(state.at("input"));
  }

 private:
  std::shared_ptr<const FilterDataset> ds_;
  std::unique_ptr<IteratorImpl> input_;
};

std::unique_ptr<IteratorImpl> FilterDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<FilterIterator>(shared_self(this), epoch);
}

// ---- take / skip (count -1: all) ----

class TakeSkipDataset final : public UnaryDataset {
 public:
  TakeSkipDataset(DatasetPtr input, int64_t count, bool take)
      : UnaryDataset(std::move(input)), count_(count), take_(take) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (take_) {
      if (count_ == 0) return 0;
      if (n == kUnknownCardinality) return n;
      if (n == kInfiniteCardinality) return count_ < 0 ? n : count_;
      return count_ < 0 ? n : std::min(n, count_);
    }
    if (n == kUnknownCardinality || n == kInfiniteCardinality) return count_ < 0 ? 0 : n;
    return count_ < 0 ? 0 : std::max<int64_t>(0, n - count_);
  }
  std::string name() const override { return take_ ? "take" : "skip"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<TakeSkipDataset>(std::move(input), count_, take_);
  }
  int64_t count() const { return count_ < 0 ? std::numeric_limits<int64_t>::max() : count_; }

 private:
  int64_t count_;
  bool take_;
};

class TakeIterator final : public IteratorImpl {
 public:
  TakeIterator(std::shared_ptr<const TakeSkipDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), input_(ds_->input().make_iterator(epoch)) {}
  std::optional<Tree> next() override {
    if (taken_ >= ds_->count()) return std::nullopt;
    std::optional<Tree> element = input_->next();
    if (element) ++taken_;
    return element;
  }
  int64_t advance(int64_t n) override {
    const int64_t skipped = input_->advance(std::min(n, ds_->count() - taken_));
    taken_ += skipped;
    return skipped;
  }
  std::optional<Tree> next_rows(int64_t n) override {
    const int64_t want = std::min(n, ds_->count() - taken_);
    if (want <= 0) return std::nullopt;
    std::optional<Tree> rows = input_->next_rows(want);
    if (rows) taken_ += rows->flatten()[0].dim(0);
    return rows;
  }
  nlohmann::json position() const override {
    return {{"op", "take"}, {"taken", taken_}, {"input", input_->position()}};
  }
  void restore(const nlohmann::json& state) override {
    check_op(state, "take");
    taken_ = state.at("taken").get<int64_t>();
    input_->restore(state.at("input"));
  }

 private:
  std::shared_ptr<const TakeSkipDataset> ds_;
  std::unique_ptr<IteratorImpl> input_;
  int64_t taken_ = 0;
};

class SkipIterator final : public IteratorImpl {
 public:
  SkipIterator(std::shared_ptr<const TakeSkipDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), input_(ds_->input().make_iterator(epoch)), remaining_(ds_->count()) {}
  std::optional<Tree> next() override {
    skip_pending();
    return input_->next();
  }
  int64_t advance(int64_t n) override {
    skip_pending();
    return input_->advance(n);
  }
  std::optional<Tree> next_rows(int64_t n) override {
    skip_pending();
    return input_->next_rows(n);
  }
  nlohmann::json position() const override {
    return {{"op", "skip"}, {"remaining", remaining_}, {"input", input_->position()}};
  }
  void restore(const nlohmann::json& state) override {
    check_op(state, "skip");
    remaining_ = state.at("remaining").get<int64_t>();
    input_->restore(state.at("input"));
  }

 private:
  // The skipping happens on the first call, as in tf.data.
  void skip_pending() {
    if (remaining_ == 0) return;
    input_->advance(remaining_);
    remaining_ = 0;
  }

  std::shared_ptr<const TakeSkipDataset> ds_;
  std::unique_ptr<IteratorImpl> input_;
  int64_t remaining_;
};

std::unique_ptr<IteratorImpl> TakeSkipDataset::make_iterator(int64_t epoch) const {
  if (take_) return std::make_unique<TakeIterator>(shared_self(this), epoch);
  return std::make_unique<SkipIterator>(shared_self(this), epoch);
}

// ---- repeat ----

class RepeatDataset final : public UnaryDataset {
 public:
  RepeatDataset(DatasetPtr input, int64_t count) : UnaryDataset(std::move(input)), count_(count) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (count_ < 0) return n == 0 ? 0 : kInfiniteCardinality;
    if (count_ == 0) return 0;
    if (n == kInfiniteCardinality || n == kUnknownCardinality) return n;
    return n * count_;
  }
  std::string name() const override { return "repeat"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<RepeatDataset>(std::move(input), count_);
  }
  bool finished(int64_t pass) const { return count_ >= 0 && pass >= count_; }
  // Pass `epoch` of this dataset reads passes epoch * count ... of the input, so
  // reshuffles differ across repeats and epochs (forever: a disjoint 2^32 block each).
  int64_t input_epoch(int64_t epoch, int64_t pass) const {
    return count_ >= 0 ? epoch * count_ + pass : (epoch << 32) + pass;
  }

 private:
  int64_t count_;
};

class RepeatIterator final : public IteratorImpl {
 public:
  RepeatIterator(std::shared_ptr<const RepeatDataset> ds, int64_t epoch) : ds_(std::move(ds)), epoch_(epoch) {}
  std::optional<Tree> next() override {
    while (!done_) {
      if (!input_) {
        if (ds_->finished(pass_)) break;
        input_ = ds_->input().make_iterator(ds_->input_epoch(epoch_, pass_));
        produced_ = false;
      }
      if (std::optional<Tree> element = input_->next()) {
        produced_ = true;
        return element;
      }
      input_.reset();
      if (!produced_) break;  // an empty pass: repeating it would never end
      ++pass_;
    }
    done_ = true;
    return std::nullopt;
  }
  nlohmann::json position() const override {
    return {{"op", "repeat"}, {"pass", pass_},     {"produced", produced_},
            {"done", done_},  {"input", input_ ? input_->position() : nlohmann::json(nullptr)}};
  }
  void restore(const nlohmann::json& state) override {
    check_op(state, "repeat");
    pass_ = state.at("pass").get<int64_t>();
    produced_ = state.at("produced").get<bool>();
    done_ = state.at("done").get<bool>();
    input_.reset();
    if (!state.at("input").is_null()) {
      input_ = ds_->input().make_iterator(ds_->input_epoch(epoch_, pass_));
      input_->restore(state["input"]);
    }
  }

 private:
  std::shared_ptr<const RepeatDataset> ds_;
  int64_t epoch_;
  std::unique_ptr<IteratorImpl> input_;  // null between passes
  int64_t pass_ = 0;
  bool produced_ = false;  // whether the current pass has yielded an element
  bool done_ = false;
};

std::unique_ptr<IteratorImpl> RepeatDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<RepeatIterator>(shared_self(this), epoch);
}

// ---- shard ----

class ShardDataset final : public UnaryDataset {
 public:
  ShardDataset(DatasetPtr input, int64_t num_shards, int64_t index)
      : UnaryDataset(std::move(input)), num_shards_(num_shards), index_(index) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return n / num_shards_ + (n % num_shards_ > index_ ? 1 : 0);
  }
  std::string name() const override { return "shard"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<ShardDataset>(std::move(input), num_shards_, index_);
  }
  // Input elements to skip before the next output.
  int64_t gap(bool started) const { return started ? num_shards_ - 1 : index_; }

 private:
  int64_t num_shards_, index_;
};

class ShardIterator final : public IteratorImpl {
 public:
  ShardIterator(std::shared_ptr<const ShardDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), input_(ds_->input().make_iterator(epoch)) {}
  std::optional<Tree> next() override {
    if (done_) return std::nullopt;
    const int64_t gap = ds_->gap(started_);
    std::optional<Tree> element;
    if (input_->advance(gap) == gap) element = input_->next();
    if (!element) {
      done_ = true;
      return std::nullopt;
    }
    started_ = true;
    return element;
  }
  nlohmann::json position() const override {
    return {{"op", "shard"}, {"started", started_}, {"done", done_}, {"input", input_->position()}};
  }
  void restore(const nlohmann::json& state) override {
    check_op(state, "shard");
    started_ = state.at("started").get<bool>();
    done_ = state.at("done").get<bool>();
    input_->restore(state.at("input"));
  }

 private:
  std::shared_ptr<const ShardDataset> ds_;
  std::unique_ptr<IteratorImpl> input_;
  bool started_ = false;
  bool done_ = false;
};

std::unique_ptr<IteratorImpl> ShardDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<ShardIterator>(shared_self(this), epoch);
}

// ---- enumerate ----

class EnumerateDataset final : public UnaryDataset {
 public:
  EnumerateDataset(DatasetPtr input, int64_t start) : UnaryDataset(std::move(input)), start_(start) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "enumerate"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<EnumerateDataset>(std::move(input), start_);
  }
  int64_t start() const { return start_; }

 private:
  int64_t start_;
};

class EnumerateIterator final : public IteratorImpl {
 public:
  EnumerateIterator(std::shared_ptr<const EnumerateDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), input_(ds_->input().make_iterator(epoch)), counter_(ds_->start()) {}
  std::optional<Tree> next() override {
    std::optional<Tree> element = input_->next();
    if (!element) return std::nullopt;
    Tree::List pair;
    pair.reserve(2);
    pair.emplace_back(int64_scalar(counter_++));
    pair.push_back(std::move(*element));
    return Tree(std::move(pair));
  }
  int64_t advance(int64_t n) override {
    const int64_t skipped = input_->advance(n);
    counter_ += skipped;
    return skipped;
  }
  nlohmann::json position() const override {
    return {{"op", "enumerate"}, {"counter", counter_}, {"input", input_->position()}};
  }
  void restore(const nlohmann::json& state) override {
    check_op(state, "enumerate");
    counter_ = state.at("counter").get<int64_t>();
    input_->restore(state.at("input"));
  }

 private:
  std::shared_ptr<const EnumerateDataset> ds_;
  std::unique_ptr<IteratorImpl> input_;
  int64_t counter_;
};

std::unique_ptr<IteratorImpl> EnumerateDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<EnumerateIterator>(shared_self(this), epoch);
}

}  // namespace

DatasetPtr make_map_dataset(DatasetPtr input, PositionedMapFn fn, MapOptions options) {
  if (options.num_parallel_calls == 1) return std::make_shared<MapDataset>(std::move(input), std::move(fn));
  return make_parallel_map_dataset(std::move(input), std::move(fn), options.num_parallel_calls);
}

DatasetPtr make_filter_dataset(DatasetPtr input, std::function<bool(const Tree&)> predicate) {
  return std::make_shared<FilterDataset>(std::move(input), std::move(predicate));
}

DatasetPtr make_take_dataset(DatasetPtr input, int64_t count) {
  return std::make_shared<TakeSkipDataset>(std::move(input), count, /*take=*/true);
}

DatasetPtr make_skip_dataset(DatasetPtr input, int64_t count) {
  return std::make_shared<TakeSkipDataset>(std::move(input), count, /*take=*/false);
}

DatasetPtr make_repeat_dataset(DatasetPtr input, int64_t count) {
  return std::make_shared<RepeatDataset>(std::move(input), count);
}

DatasetPtr make_shard_dataset(DatasetPtr input, int64_t num_shards, int64_t index) {
  return std::make_shared<ShardDataset>(std::move(input), num_shards, index);
}

DatasetPtr make_enumerate_dataset(DatasetPtr input, int64_t start) {
  return std::make_shared<EnumerateDataset>(std::move(input), start);
}

}  // namespace chorus::data
