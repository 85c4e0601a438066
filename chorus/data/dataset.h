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
#include "chorus/data/dataset_options.h"

namespace chorus::data {

class DatasetImpl;
class IteratorImpl;

// Where an iterator stands: enough to resume the same pass at the same element after a
// crash (saved in checkpoints as JSON). Opaque to callers: {"pipeline": "range ->
// shuffle -> batch", "state": each stage's state nesting its input's}. Stages with
// read-ahead (shuffle, prefetch, parallel map, unbatch, a cache still recording)
// restore by replaying their input from the start of the pass, skipping without
// running map functions where they can.
struct IteratorPosition {
  nlohmann::json state;
};

// One pass over a dataset. Move-only; use from one thread.
class Iterator {
 public:
  explicit Iterator(std::unique_ptr<IteratorImpl> impl);
  // `pipeline` (DatasetImpl::describe()) tags positions: restore() rejects a position
  // saved from another pipeline, naming both.
  Iterator(std::unique_ptr<IteratorImpl> impl, std::string pipeline);
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();

  // The next element, or nullopt at the end of the pass (and on every later call).
  // Errors from readers or user functions propagate as exceptions; through prefetch and
  // parallel map the next call continues with the following element, elsewhere the
  // iterator should be considered unusable.
  std::optional<Tree> next();
  // The position after the last element returned.
  IteratorPosition position() const;
  // Moves to `position` (from position() of an iterator over the same dataset, possibly
  // in another process, for the same epoch): the next call to next() returns the element
  // that followed it. Throws ValueError if the position belongs to another pipeline
  // (naming both) or is malformed.
  void restore(const IteratorPosition& position);

 private:
  IteratorImpl& checked() const;

  std::unique_ptr<IteratorImpl> impl_;
  std::string pipeline_;
};

class Dataset {
 public:
  explicit Dataset(std::shared_ptr<const DatasetImpl> impl);

  // ---- sources ----
  // Element i is every leaf's slice i along the first axis (views, no copies). All leaves
  // must have rank >= 1 and the same first dimension: ValueError naming the leaves
  // otherwise ("from_tensor_slices: expected every tensor to have the same first
  // dimension. Received: shape (4, 2) at ["x"] and shape (3,) at ["y"]").
  static Dataset from_tensor_slices(const Tree& tree);
  // Scalars (int64) start, start + step, ... before stop. ValueError for step 0.
  static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  static Dataset range(int64_t stop) { return range(0, stop); }
  // Elements from a generator: `make(epoch)` is called at the start of each pass (on
  // its first next()) and returns a function yielding the next element or nullopt at
  // the end; it is not called again after nullopt. Restoring a position replays a fresh
  // generator up to it, so pass e must yield the same elements each time it is made.
  // `make` may be called from several threads when several iterators run at once.
  using Generator = ElementGenerator;
  static Dataset from_generator(std::function<Generator(int64_t epoch)> make,
                                int64_t cardinality = kUnknownCardinality);
  // Elements are lists of the datasets' elements; ends with the shortest.
  static Dataset zip(const std::vector<Dataset>& datasets);

  // ---- transforms ----
  // fn(element) for every element; the cardinality is kept. fn runs on the iterating
  // thread, or on the iterator's workers (MapOptions). Pipelines do not record on
  // gradient tapes of worker threads; keep fn free of training-state side effects.
  // fn's ops run on its thread alone (tf.data's default max_intra_op_parallelism of 1):
  // a per-batch cast that started an OpenMP team beside the replicas' made each MNIST
  // step 14x slower.
  Dataset map(std::function<Tree(const Tree&)> fn, MapOptions options = {}) const;
  // fn(element, its position): for maps that draw random numbers per element and epoch.
  Dataset map(std::function<Tree(const Tree&, const ElementPosition&)> fn, MapOptions options = {}) const;
  // The elements for which predicate(element) is true; cardinality unknown.
  Dataset filter(std::function<bool(const Tree&)> predicate) const;
  // tf.data semantics: a buffer of `buffer_size` elements, each output drawn uniformly
  // from it and replaced by the next input; once the input ends the buffer drains at
  // random. The order of pass e is a pure function of the seed (forked by e when
  // reshuffle_each_iteration; pass 0 is the same either way) and the input. Without a
  // seed one is drawn when the dataset is made: positions carry it, so a restored
  // iterator finishes its pass in the saved order, but pass a seed for splits that
  // must agree across processes. Small fixed-layout elements (<= 256 bytes of leaves)
  // are buffered packed and come out as fresh tensors; larger ones as the input's trees.
  Dataset shuffle(int64_t buffer_size, std::optional<uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  // Stacks consecutive elements along a new first axis into one fresh tensor per leaf.
  // Leaves must agree in shape and dtype: ShapeError / DTypeError naming the leaf path
  // and the element's index in the batch ("batch: element 2 of the batch has shape (4,)
  // at ["x"], but element 0 has shape (3,)"); ValueError for another tree structure.
  // The last batch is short unless drop_remainder.
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  // batch for variable-length leaves: each leaf is padded with options.padding_value (""
  // for string leaves) to the longest in the batch along every axis, or to
  // options.padded_shapes. ShapeError
  // for an element longer than its padded shape or of another rank.
  Dataset padded_batch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  // batch for leaves that differ in their first dimension (tf.data's ragged_batch): a
  // leaf of rank >= 1 becomes a RaggedTensor in its Tree form (chorus/core/ragged_tensor.h:
  // a {"__ragged_row_splits__", "__ragged_values__"} dict) whose row i is element i's
  // leaf; scalar leaves stack densely. DTypeError / ShapeError naming the element and
  // leaf for another dtype, rank, or inner dims; ValueError for an element that already
  // holds a RaggedTensor.
  //   lines.map(tokenize).ragged_batch(32)  // {"__ragged_row_splits__": (33,) int64, ...}
  Dataset ragged_batch(int64_t batch_size, bool drop_remainder = false) const;
  // The inverse of batch (and of ragged_batch): slices every leaf along its first axis
  // (views of the batch); a RaggedTensor in Tree form gives its rows. ShapeError for a
  // scalar leaf or leaves with different first dimensions (a ragged leaf's: its rows).
  Dataset unbatch() const;
  // The first `count` elements (-1: all). Stops pulling its input after them.
  Dataset take(int64_t count) const;
  // All but the first `count` elements (-1: none).
  Dataset skip(int64_t count) const;
  // `count` passes over this dataset (-1: forever); pass e of the result reads passes
  // e * count ... of this one so reshuffles differ across repeats. An input pass that
  // yields nothing ends the repetition (no endless loop over an empty dataset).
  Dataset repeat(int64_t count = -1) const;
  // The first complete pass is recorded and every later pass (of any epoch) replays it
  // without touching the input: in memory when `path` is empty, else in the file
  // `path`/elements.chorus-cache (written to a temporary file and renamed when the pass
  // completes; a later process with the same path reads it back). A pass also counts as
  // complete when it reaches the input's known cardinality. A partial pass is dropped.
  // The in-memory recording is shared by all iterators of this dataset (guarded by a
  // mutex; safe from several threads). Served elements share storage with the
  // recording: do not write into them. A corrupt or truncated file is an IOError naming
  // the file and byte offset; a file of another pipeline is a ValueError.
  Dataset cache(const std::string& path = "") const;
  // A background thread per iterator keeps up to `buffer_size` elements ready
  // (kAutotune: 8), so a producer no slower than the consumer costs nothing but a
  // hand-off of a few microseconds per element (less with larger buffers: a producer
  // that filled the queue is woken when it is half empty). Errors arrive at their
  // element's place. Destroying the iterator stops and joins the thread.
  Dataset prefetch(int64_t buffer_size = 1) const;
  // Every num_shards-th element starting at `index`: shards are disjoint and together
  // cover the input. Cardinality ceil((n - index) / num_shards).
  Dataset shard(int64_t num_shards, int64_t index) const;
  // Elements become [int64 index, element] lists, counting from `start`.
  Dataset enumerate(int64_t start = 0) const;

  // The number of elements per pass if known, else kUnknownCardinality or
  // kInfiniteCardinality, by tf.data's rules (map, shuffle, cache, prefetch keep it;
  // filter makes it unknown; batch divides rounding up, or down with drop_remainder;
  // take/skip clamp; repeat multiplies; zip takes the shortest).
  int64_t cardinality() const;

  // A new iterator at the start of pass `epoch`. Argument errors of every transform
  // are ValueErrors raised when the transform is called ("batch: expected batch_size >
  // 0. Received: batch_size=0"); data errors are raised by Iterator::next().
  Iterator iterator(int64_t epoch = 0) const;
  const DatasetImpl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const DatasetImpl> impl_;
};

}  // namespace chorus::data
