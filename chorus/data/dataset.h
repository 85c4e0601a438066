// Dataset: a tf.data-style input pipeline over Tree elements. A Dataset is an immutable
// description (a shallow handle: copies share it, and it is safe to use from many
// threads); iterating it makes an Iterator, which holds all mutable state and belongs to
// one thread. Each transform returns a new Dataset that reads from this one.
//
//   auto train = Dataset::from_tensor_slices(columns)
//                    .map(preprocess)
//                    .shuffle(100'000, /*seed=*/42, /*reshuffle_each_iteration=*/false)
//                    .take(80'000).batch(1000).cache();
//   for (auto it = train.iterator(epoch); auto batch = it.next();) { ... }
//
// Elements: an (x, y) pair is a two-element list Tree; a record is a dict Tree.
// Epochs: iterator(epoch) starts pass number `epoch`; randomness (shuffle order) is a
// pure function of the seed and the epoch, so any pass can be replayed exactly.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/tree.h"

namespace chorus::data {

// tf.data's cardinality constants.
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

class DatasetImpl;
class IteratorImpl;

// Where an iterator stands: enough to resume the same pass at the same element after a
// crash (saved in checkpoints as JSON). Opaque to callers.
struct IteratorPosition {
  nlohmann::json state;
};

// One pass over a dataset. Move-only; use from one thread.
class Iterator {
 public:
  explicit Iterator(std::unique_ptr<IteratorImpl> impl);
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();

  // The next element, or nullopt at the end of the pass. Errors from readers or user
  // functions propagate as exceptions (the iterator is then unusable).
  std::optional<Tree> next();
  // The position after the last element returned.
  IteratorPosition position() const;
  // Moves to `position` (from position() of an iterator over the same dataset, possibly
  // in another process): the next call to next() returns the element that followed it.
  // Throws ValueError if the position does not belong to this pipeline.
  void restore(const IteratorPosition& position);

 private:
  std::unique_ptr<IteratorImpl> impl_;
};

struct MapOptions {
  // Elements transformed concurrently on worker threads; 1 runs fn on the iterating
  // thread. Results always come out in input order.
  int num_parallel_calls = 1;
};

struct PaddedBatchOptions {
  // Per-leaf padded shape without the batch axis, -1 meaning "the longest in the batch".
  // Empty: pad every axis to the longest in the batch.
  std::vector<std::vector<int64_t>> padded_shapes;
  double padding_value = 0;
  bool drop_remainder = false;
};

class Dataset {
 public:
  explicit Dataset(std::shared_ptr<const DatasetImpl> impl);

  // ---- sources ----
  // Element i is every leaf's slice i along the first axis (views, no copies). All leaves
  // must have the same first dimension (ValueError naming the leaves otherwise).
  static Dataset from_tensor_slices(const Tree& tree);
  // Scalars (int64) start, start + step, ... before stop.
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  static Dataset range(int64_t stop) { return range(0, stop); }
  // Elements from a generator: `make(epoch)` is called at the start of each pass and
  // returns a function yielding the next element or nullopt at the end. Restoring a
  // position replays the generator up to it.
  using Generator = std::function<std::optional<Tree>()>;
  static Dataset from_generator(std::function<Generator(int64_t epoch)> make,
                                int64_t cardinality = kUnknownCardinality);
  // Elements are lists of the datasets' elements; ends with the shortest.
  static Dataset zip(const std::vector<Dataset>& datasets);

  // ---- transforms ----
  Dataset map(std::function<Tree(const Tree&)> fn, MapOptions options = {}) const;
  Dataset filter(std::function<bool(const Tree&)> predicate) const;
  // tf.data semantics: a buffer of `buffer_size` elements, each output drawn uniformly
  // from it and replaced by the next input. The order of pass e depends on (seed, e) if
  // reshuffle_each_iteration, else on seed alone. Without a seed one is drawn when the
  // dataset is made (pass one explicitly for reproducible runs across processes).
  Dataset shuffle(int64_t buffer_size, std::optional<uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  // Stacks consecutive elements along a new first axis (leaves must agree in shape and
  // dtype: ShapeError naming the leaf and element otherwise). The last batch is short
  // unless drop_remainder.
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  Dataset padded_batch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  // The inverse of batch: slices every leaf along its first axis.
  Dataset unbatch() const;
  Dataset take(int64_t count) const;
  Dataset skip(int64_t count) const;
  // `count` passes over this dataset (-1: forever); pass e of the result reads passes
  // e * count ... of this one so reshuffles differ across repeats.
  Dataset repeat(int64_t count = -1) const;
  // The first full pass is recorded and later passes replay it: in memory when `path` is
  // empty, else in files under `path` (written atomically when the pass completes; a
  // partial pass is never taken for a whole one).
  Dataset cache(const std::string& path = "") const;
  // A background thread keeps up to `buffer_size` elements ready.
  Dataset prefetch(int64_t buffer_size = 1) const;
  // Every num_shards-th element starting at `index`.
  Dataset shard(int64_t num_shards, int64_t index) const;
  // Elements become [int64 index, element] lists.
  Dataset enumerate(int64_t start = 0) const;

  // The number of elements per pass if known, else kUnknownCardinality or
  // kInfiniteCardinality (as tf.data.Dataset.cardinality()).
  int64_t cardinality() const;

  Iterator iterator(int64_t epoch = 0) const;
  const DatasetImpl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const DatasetImpl> impl_;
};

}  // namespace chorus::data
