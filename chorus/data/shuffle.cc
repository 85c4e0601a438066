// shuffle with tf.data's semantics: fill a buffer of buffer_size elements; each output
// takes a uniformly drawn slot and refills it with the next input element; once the
// input ends, the drawn slot is filled from the buffer's last slot (drained at random).
//
// Output k's draw is Philox(key, counter = k) mapped to [0, buffer size), so the order
// of a pass is a pure function of (key, input length). The key is the seed's for pass 0
// (and for every pass without reshuffling) and Generator(seed).fork(pass) otherwise.
// Restoring replays the draws on input *indices* (cheap integers), then reads from a
// fresh input only the elements that sit in the buffer, skipping the rest.
#include <algorithm>
#include <limits>
#include <utility>

#include "chorus/core/random.h"
#include "chorus/data/dataset_impl.h"
#include "chorus/data/shuffle_buffer.h"

namespace chorus::data {
namespace {

// A uniform index in [0, n) for output number k (Lemire's multiply-shift; the bias is
// below 2^-32 for any buffer that fits in memory).
int64_t draw(uint64_t key, int64_t k, int64_t n) {
  const auto block = philox4x32(key, static_cast<uint64_t>(k));
  const uint64_t bits = (uint64_t{block[0]} << 32) | block[1];
  __extension__ using Wide = unsigned __int128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet
  return static_cast<int64_t>((static_cast<Wide>(bits) * static_cast<uint64_t>(n)) >> 64);
}

class ShuffleDataset final : public UnaryDataset {
 public:
  ShuffleDataset(DatasetPtr input, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : UnaryDataset(std::move(input)), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}
  std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const override;
  int64_t cardinality() const override { return input_->cardinality(); }
  std::string name() const override { return "shuffle"; }
  DatasetPtr with_input(DatasetPtr input) const override {
    return std::make_shared<ShuffleDataset>(std::move(input), buffer_size_, seed_, reshuffle_);
  }
  int64_t buffer_size() const { return buffer_size_; }
  uint64_t key(int64_t epoch) const {
    if (!reshuffle_ || epoch == 0) return Generator(seed_).key();
    return Generator(seed_).fork(static_cast<uint64_t>(epoch)).key();
  }

 private:
  int64_t buffer_size_;
  uint64_t seed_;
  bool reshuffle_;
};

// The buffer's contents as input indices after `emitted` outputs of a pass whose input
// has `input_size` elements (or more, when it had not ended): what the real buffer
// holds, slot for slot. `pulled` receives the number of input elements read.
std::vector<int64_t> simulate(uint64_t key, int64_t buffer_size, int64_t emitted, int64_t input_size,
                              int64_t& pulled) {
  std::vector<int64_t> slots;
  pulled = 0;
  while (static_cast<int64_t>(slots.size()) < buffer_size && pulled < input_size) slots.push_back(pulled++);
  for (int64_t k = 0; k < emitted && !slots.empty(); ++k) {
    const int64_t j = draw(key, k, static_cast<int64_t>(slots.size()));
    if (pulled < input_size) {
      slots[j] = pulled++;
    } else {
      slots[j] = slots.back();
      slots.pop_back();
    }
  }
  return slots;
}

class ShuffleIterator final : public IteratorImpl {
 public:
  ShuffleIterator(std::shared_ptr<const ShuffleDataset> ds, int64_t epoch)
      : ds_(std::move(ds)), epoch_(epoch), key_(ds_->key(epoch)), input_(ds_->input().make_iterator(epoch)) {}

  std::optional<Tree> next() override {
    if (!filled_) fill();
    if (buffer_.empty()) return std::nullopt;
    const int64_t j = draw(key_, emitted_++, buffer_.size());
    Tree out = buffer_.take(j);
    if (std::optional<Tree> incoming = pull()) {
      buffer_.put(j, std::move(*incoming));
    } else {
      buffer_.move_last_to(j);
    }
    return out;
  }

  // A shuffle whose buffer holds its whole input, packed (small elements of one layout: a
  // record of scalars), draws batches straight into stacked rows — the same draws, in the
  // same order, as next() one at a time, without a tree per element.
  std::optional<Tree> next_rows(int64_t n) override {
    if (!filled_) fill();
    if (!input_done_ || !buffer_.packed()) return std::nullopt;
    return buffer_.take_rows(n, [this](int64_t size) { return draw(key_, emitted_++, size); });
  }

  // From the start of a pass over an input of known size, skipping is a restore.
  int64_t advance(int64_t n) override {
    const int64_t size = ds_->input().cardinality();
    if (filled_ || size < 0) return IteratorImpl::advance(n);
    const int64_t skipped = std::min(n, size);
    rebuild(skipped, size, /*input_done=*/true);
    return skipped;
  }

  nlohmann::json position() const override {
    return {{"op", "shuffle"}, {"key", key_},       {"filled", filled_},
            {"emitted", emitted_}, {"pulled", pulled_}, {"input_done", input_done_}};
  }

  void restore(const nlohmann::json& state) override {
    check_op(state, "shuffle");
    key_ = state.at("key").get<uint64_t>();  // the saved key: an unseeded shuffle resumes too
    const int64_t emitted = state.at("emitted").get<int64_t>();
    const int64_t pulled = state.at("pulled").get<int64_t>();
    const bool input_done = state.at("input_done").get<bool>();
    buffer_.clear();
    filled_ = false;
    emitted_ = pulled_ = 0;
    input_done_ = false;
    input_ = ds_->input().make_iterator(epoch_);
    if (!state.at("filled").get<bool>()) return;
    rebuild(emitted, input_done ? pulled : std::numeric_limits<int64_t>::max(), input_done);
    if (pulled_ != pulled) {
      throw_error<ValueError>("shuffle: cannot restore: the position says {} input elements were read, replaying "
                              "its draws reads {}",
                              pulled, pulled_);
    }
  }

 private:
  std::optional<Tree> pull() {
    if (input_done_) return std::nullopt;
    std::optional<Tree> element = input_->next();
    if (element) {
      ++pulled_;
    } else {
      input_done_ = true;
    }
    return element;
  }

  void fill() {
    filled_ = true;
    // An input that fits in the buffer, read as stacked rows (in-memory arrays): packed in
    // one pass, and known to have ended.
    const int64_t size = ds_->input().cardinality();
    if (size > 0 && size <= ds_->buffer_size()) {
      if (std::optional<Tree> rows = input_->next_rows(size)) {
        const int64_t got = rows->flatten()[0].dim(0);
        buffer_.push_rows(*rows);
        pulled_ += got;
        input_done_ = got == size;
      }
    }
    while (!input_done_ && buffer_.size() < ds_->buffer_size()) {
      std::optional<Tree> element = pull();
      if (!element) break;
      buffer_.push_back(std::move(*element));
    }
  }

  // Puts a fresh iterator (input_ at the start) where it is after `emitted` outputs of
  // a pass over an input of `input_size` elements, reading only the buffered elements.
  void rebuild(int64_t emitted, int64_t input_size, bool input_done) {
    int64_t pulled = 0;
    const std::vector<int64_t> slots = simulate(key_, ds_->buffer_size(), emitted, input_size, pulled);
    std::vector<std::pair<int64_t, size_t>> order;  // (input index, slot) by index
    order.reserve(slots.size());
    for (size_t s = 0; s < slots.size(); ++s) order.emplace_back(slots[s], s);
    std::sort(order.begin(), order.end());
    buffer_.clear();
    buffer_.resize(static_cast<int64_t>(slots.size()));
    int64_t position = 0;
    // A whole input read as stacked rows (in-memory arrays): the buffered ones packed
    // from it, without an element each.
    std::optional<Tree> rows;
    if (pulled > 0 && pulled == input_size) rows = input_->next_rows(pulled);
    if (rows) {
      position = rows->flatten()[0].dim(0);
      if (position == pulled) buffer_.put_rows(*rows, order);
      order.clear();  // else the check below names the missing element
    }
    for (const auto& [index, slot] : order) {
      std::optional<Tree> element;
      if (input_->advance(index - position) == index - position) element = input_->next();
      if (!element) {
        throw_error<ValueError>("shuffle: cannot restore: input element {} of '{}' is missing (is the input "
                                "deterministic?)",
                                index, ds_->input().describe());
      }
      buffer_.put(static_cast<int64_t>(slot), std::move(*element));
      position = index + 1;
    }
    if (input_->advance(pulled - position) != pulled - position) {
      throw_error<ValueError>("shuffle: cannot restore: '{}' ended before element {}", ds_->input().describe(),
                              pulled);
    }
    filled_ = true;
    emitted_ = emitted;
    pulled_ = pulled;
    // With a known end, the end was seen (the draws above depend on it), so never read past it.
    input_done_ = input_done && pulled == input_size;
  }

  std::shared_ptr<const ShuffleDataset> ds_;
  int64_t epoch_;
  uint64_t key_;
  std::unique_ptr<IteratorImpl> input_;
  ShuffleBuffer buffer_;
  bool filled_ = false;
  int64_t emitted_ = 0;
  int64_t pulled_ = 0;
  bool input_done_ = false;
};

std::unique_ptr<IteratorImpl> ShuffleDataset::make_iterator(int64_t epoch) const {
  return std::make_unique<ShuffleIterator>(shared_self(this), epoch);
}

}  // namespace

DatasetPtr make_shuffle_dataset(DatasetPtr input, int64_t buffer_size, uint64_t seed, bool reshuffle) {
  return std::make_shared<ShuffleDataset>(std::move(input), buffer_size, seed, reshuffle);
}

}  // namespace chorus::data
