// The plain values of Dataset's API that its stages (dataset_impl.h) share: the
// cardinality constants, the options of map and padded_batch, a mapped element's
// position, a generator's type. Values and constants only; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "chorus/core/tree.h"

namespace chorus::data {

// tf.data's cardinality constants.
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;
// tf.data.AUTOTUNE: for prefetch's buffer_size (8 elements) and map's num_parallel_calls
// (one worker per hardware thread).
inline constexpr int64_t kAutotune = -1;

struct MapOptions {
  // Elements transformed concurrently on worker threads (kAutotune: one per hardware
  // thread); 1 runs fn on the iterating thread. Results always come out in input order,
  // and an exception from fn surfaces from next() at its element's place. With more than
  // one, fn must be safe to call from several threads at once.
  int num_parallel_calls = 1;
};

// Where a map function's element is: pass `epoch` of the dataset, element `index` of
// that pass as the map stage sees it (0, 1, ... in input order, whatever the number of
// parallel calls). Random augmentations keyed by it (text::MaskedLMMaskGenerator) are
// the same on every run, thread count and restore.
struct ElementPosition {
  int64_t epoch = 0;
  int64_t index = 0;
};

struct PaddedBatchOptions {
  // Per-leaf padded shape without the batch axis, -1 meaning "the longest in the batch".
  // Empty: pad every axis to the longest in the batch.
  std::vector<std::vector<int64_t>> padded_shapes = {};
  double padding_value = 0;  // string leaves always pad with ""
  bool drop_remainder = false;
};

// What Dataset::from_generator's `make(epoch)` returns: each call yields the next element,
// or nullopt at the end of the pass.
using ElementGenerator = std::function<std::optional<Tree>()>;

}  // namespace chorus::data
