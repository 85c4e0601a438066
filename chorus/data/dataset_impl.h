// Internal interfaces of the Dataset pipeline: a DatasetImpl is one immutable stage
// (shared by every Dataset handle and iterator that uses it; safe to use from many
// threads); an IteratorImpl is one pass over it (mutable, one thread). Also the leaf
// helpers every stage shares. Not part of the public API: include dataset.h instead.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/tree.h"
#include "chorus/data/dataset_options.h"

namespace chorus::data {

class IteratorImpl {
 public:
  virtual ~IteratorImpl() = default;

  // The next element, or nullopt at the end of the pass (and on every later call).
  virtual std::optional<Tree> next() = 0;
  // Skips up to `n` elements; returns how many were skipped (fewer only at the end).
  // The default calls next(); stages that can skip without producing elements (slices,
  // map, batch, ...) override it, which keeps restore-by-replay cheap.
  virtual int64_t advance(int64_t n);
  // The next up-to-`n` elements already stacked along a new first axis, as views of the
  // stage's own storage (no copy), or nullopt if this stage cannot (the default) — then
  // nothing was consumed. batch() asks first: slices of in-memory arrays in order batch
  // for free. Returns an empty-rowed Tree never; nullopt also at the end of the pass.
  virtual std::optional<Tree> next_rows(int64_t /*n*/) { return std::nullopt; }
  // This stage's state now, as JSON: {"op": name(), ...}, nesting its input's state
  // where that is how it restores (others replay their input from the start of the
  // pass: shuffle, prefetch, parallel map, unbatch, a recording cache).
  virtual nlohmann::json position() const = 0;
  // Puts this iterator where `state` (from position() of an iterator over an equal
  // pipeline and epoch, maybe in another process) says; any point of the pass. Throws
  // ValueError for a state of another stage; nlohmann::json errors for a malformed one
  // (Iterator::restore turns them into ValueError).
  virtual void restore(const nlohmann::json& state) = 0;
};

// The next up-to-`batch_size` elements of `input` for a batching stage, or nullopt at the
// end of the pass and for a short last batch when `drop_remainder`.
std::optional<std::vector<Tree>> next_elements(IteratorImpl& input, int64_t batch_size, bool drop_remainder);

class DatasetImpl;
using DatasetPtr = std::shared_ptr<const DatasetImpl>;

class DatasetImpl : public std::enable_shared_from_this<DatasetImpl> {
 public:
  virtual ~DatasetImpl() = default;

  // A fresh iterator at the start of pass `epoch`. It keeps this stage (and its inputs)
  // alive through shared_from_this(). REQUIRES: this stage is owned by a shared_ptr.
  virtual std::unique_ptr<IteratorImpl> make_iterator(int64_t epoch) const = 0;
  // Elements per pass, or kUnknownCardinality / kInfiniteCardinality.
  virtual int64_t cardinality() const = 0;
  // The stage's op name ("shuffle"): tags positions and error messages.
  virtual std::string name() const = 0;
  // The stages this one reads from (none for sources).
  virtual std::vector<const DatasetImpl*> inputs() const { return {}; }

  // The whole chain, e.g. "range -> shuffle -> take" or "zip(range, range -> map) -> batch":
  // positions carry it so restoring into a different pipeline is detected.
  std::string describe() const;

  // ---- rewriting: auto_shard.h rebuilds a pipeline stage by stage ----
  // This stage with the same arguments reading `inputs` (one per inputs(), in order): a
  // new stage sharing nothing mutable with this one (a cache's recording starts empty).
  // Sources, which read no stage, return themselves.
  virtual DatasetPtr with_inputs(std::vector<DatasetPtr> inputs) const = 0;
  // The files a source reads lazily on each pass, in order (text_line_dataset); empty
  // for every other stage (sources that read their file when made hold no file list).
  virtual std::vector<std::string> files() const { return {}; }
  // The same source over `files` instead. REQUIRES: !files().empty(), !files.empty().
  virtual DatasetPtr with_files(std::vector<std::string> files) const;
  // How many elements one output stacks: batch_size for batch(), padded_batch() and
  // ragged_batch(),
  // 0 for every other stage.
  virtual int64_t batch_size() const { return 0; }
  // The same batching stage stacking `batch_size` elements. REQUIRES: this->batch_size()
  // > 0, batch_size > 0.
  virtual DatasetPtr with_batch_size(int64_t batch_size) const;
  // The `path` of cache(path); empty for every other stage and an in-memory cache.
  virtual std::string cache_path() const { return {}; }
  // The same cache stage over `path`. REQUIRES: !cache_path().empty().
  virtual DatasetPtr with_cache_path(std::string path) const;
};

// A stage that reads no other stage.
class SourceDataset : public DatasetImpl {
 public:
  DatasetPtr with_inputs(std::vector<DatasetPtr> inputs) const final;
};

// A stage that reads one input: most transforms.
class UnaryDataset : public DatasetImpl {
 public:
  explicit UnaryDataset(std::shared_ptr<const DatasetImpl> input) : input_(std::move(input)) {}
  std::vector<const DatasetImpl*> inputs() const override { return {input_.get()}; }
  const DatasetImpl& input() const { return *input_; }
  DatasetPtr with_inputs(std::vector<DatasetPtr> inputs) const final;
  // This stage with the same arguments reading `input`: with_inputs for one input.
  virtual DatasetPtr with_input(DatasetPtr input) const = 0;

 protected:
  std::shared_ptr<const DatasetImpl> input_;
};

// `stage` as a shared_ptr to its own type, for iterators to keep it alive.
template <class Stage>
std::shared_ptr<const Stage> shared_self(const Stage* stage) {
  return std::static_pointer_cast<const Stage>(stage->shared_from_this());
}

// ---- position helpers ----
// Throws ValueError unless state["op"] == op ("restore: expected a position of a 'batch'
// stage, got one of a 'take' stage").
void check_op(const nlohmann::json& state, const std::string& op);

// A fresh iterator over pass `epoch` of `input`, advanced past `count` elements: how
// stages with read-ahead (prefetch, parallel map, shuffle, unbatch) restore. Throws
// ValueError naming `op` if the input has fewer elements (it is not deterministic).
std::unique_ptr<IteratorImpl> replay_input(const DatasetImpl& input, int64_t epoch, int64_t count, const char* op);

// ---- leaf helpers: cheap walks over a Tree without copying its tensors ----

// Calls fn(leaf) for every leaf in flatten() order.
template <class Fn>
void for_each_leaf(const Tree& tree, Fn&& fn) {
  if (tree.is_tensor()) {
    fn(tree.tensor());
  } else if (tree.is_dict()) {
    for (const auto& [key, child] : tree.dict()) for_each_leaf(child, fn);
  } else if (tree.is_list()) {
    for (const Tree& child : tree.list()) for_each_leaf(child, fn);
  }
}

// A tree with `tree`'s structure whose k-th leaf (flatten order) is fn(k, leaf).
template <class Fn>
Tree transform_leaves(const Tree& tree, Fn&& fn, size_t& k) {
  if (tree.is_tensor()) return Tree(fn(k++, tree.tensor()));
  if (tree.is_dict()) {
    Tree::Dict out;
    for (const auto& [key, child] : tree.dict()) out.emplace_hint(out.end(), key, transform_leaves(child, fn, k));
    return Tree(std::move(out));
  }
  if (tree.is_list()) {
    Tree::List out;
    out.reserve(tree.list().size());
    for (const Tree& child : tree.list()) out.push_back(transform_leaves(child, fn, k));
    return Tree(std::move(out));
  }
  return Tree();
}
template <class Fn>
Tree transform_leaves(const Tree& tree, Fn&& fn) {
  size_t k = 0;
  return transform_leaves(tree, fn, k);
}

// Appends pointers to `element`'s leaves to `leaves` after checking that `element` has
// `reference`'s structure; false if it does not. The pointers live as long as `element`.
bool collect_leaves_like(const Tree& element, const Tree& reference, std::vector<const Tensor*>& leaves);

// Paths of the leaves in flatten order, as Python indexes them: ["x"], [1]["rating"];
// "(the element)" for a tree that is one tensor. For error messages.
std::vector<std::string> leaf_paths(const Tree& tree);

// Row `row` of `tensor` along its first axis as a view without that axis (one
// allocation: the TensorImpl). REQUIRES: rank >= 1, 0 <= row < dim(0).
Tensor row_view(const Tensor& tensor, int64_t row);

// A fresh int64 scalar.
Tensor int64_scalar(int64_t value);

// ---- stage factories (one per transform; dataset.cc calls them) ----
DatasetPtr make_tensor_slices_dataset(const Tree& tree);
DatasetPtr make_range_dataset(int64_t start, int64_t stop, int64_t step);
DatasetPtr make_generator_dataset(std::function<ElementGenerator(int64_t)> make, int64_t cardinality);
DatasetPtr make_zip_dataset(std::vector<DatasetPtr> inputs);
// Dispatches to make_parallel_map_dataset when options.num_parallel_calls != 1. Both
// save {"op": "map", "count": outputs so far} (the sequential one adds "input": its
// input's state) and restore either form.
using PositionedMapFn = std::function<Tree(const Tree&, const ElementPosition&)>;
DatasetPtr make_map_dataset(DatasetPtr input, PositionedMapFn fn, MapOptions options);
DatasetPtr make_parallel_map_dataset(DatasetPtr input, PositionedMapFn fn, int num_workers);
DatasetPtr make_filter_dataset(DatasetPtr input, std::function<bool(const Tree&)> predicate);
DatasetPtr make_shuffle_dataset(DatasetPtr input, int64_t buffer_size, uint64_t seed, bool reshuffle);
DatasetPtr make_batch_dataset(DatasetPtr input, int64_t batch_size, bool drop_remainder);
DatasetPtr make_padded_batch_dataset(DatasetPtr input, int64_t batch_size, PaddedBatchOptions options);
DatasetPtr make_ragged_batch_dataset(DatasetPtr input, int64_t batch_size, bool drop_remainder);
DatasetPtr make_unbatch_dataset(DatasetPtr input);
DatasetPtr make_take_dataset(DatasetPtr input, int64_t count);
DatasetPtr make_skip_dataset(DatasetPtr input, int64_t count);
DatasetPtr make_repeat_dataset(DatasetPtr input, int64_t count);
DatasetPtr make_cache_dataset(DatasetPtr input, std::string path);
DatasetPtr make_prefetch_dataset(DatasetPtr input, int64_t buffer_size);
DatasetPtr make_shard_dataset(DatasetPtr input, int64_t num_shards, int64_t index);
DatasetPtr make_enumerate_dataset(DatasetPtr input, int64_t start);

}  // namespace chorus::data
