// Auto-sharding of an input pipeline across the workers of a multi-worker job: the policy
// enum (tf.data's AutoShardPolicy) and FILE sharding, which rebuilds a pipeline so that a
// worker reads only its files and batches its share of the global batch. Stateless
// functions over immutable stages; thread-safe.
//
//   std::string why;
//   if (auto mine = shard_by_file(train, num_workers, rank, &why)) {
//     train = *mine;  // this worker's files, its rows of each global batch
//   } else {
//     log("FILE sharding does not apply ({}); sharding by element", why);
//   }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "chorus/data/dataset.h"

namespace chorus::data {

// How a multi-worker job divides its input (tf.data.experimental.AutoShardPolicy).
enum class AutoShardPolicy {
  // FILE where shard_by_file applies, else DATA.
  kAuto,
  // Every worker reads only its files (shard_by_file); an error where that does not apply.
  kFile,
  // Every worker iterates the whole pipeline, the same global batches, and keeps its
  // contiguous rows of each (element sharding): any pipeline, every input read W times.
  kData,
  // No automatic sharding: every worker iterates the dataset as given.
  kOff,
};

// "AUTO", "FILE", "DATA" or "OFF": tf.data's names, for logs and messages.
std::string_view auto_shard_policy_name(AutoShardPolicy policy);

// Worker `index`'s dataset under FILE sharding among `num_workers`: the same pipeline
// (every stage rebuilt with the same arguments; `dataset` itself is unchanged) except that
//  - its file source reads only files k with k % num_workers == index, in their order;
//  - the batch() or padded_batch() that makes the dataset's elements (the one nearest the
//    output) stacks this worker's share of its global batch B: B / num_workers rows,
//    one more for the first B % num_workers workers (as element sharding splits rows);
//    drop_remainder and padding options are kept;
//  - every cache(path) with a file path caches at path + ".worker-<index>-of-<num_workers>",
//    so that workers sharing a file system do not read or replace each other's cache.
// Every other argument is kept, so counting stages count this worker's own elements:
// take(N) after the batch is N local batches; shuffle(seed) shuffles the worker's lines
// with the same seed on every worker; shard() and skip() apply to the worker's stream.
// The rows of all workers' batches together are the rows of the dataset's batches (as
// multisets) unless a stage before the batch counts elements (take, skip, shard, enumerate).
// Workers whose files hold more lines have more batches: the caller decides how the
// workers agree on the number of steps.
//
// Returns nullopt, with a sentence saying why in *why (when `why` is not null; it is
// untouched on success), when FILE sharding does not apply:
//  - no stage reads files (sources other than text_line_dataset hold their data);
//  - the pipeline has more than one source, e.g. zip(text_line_dataset, range): sharding
//    the files of one source would change which elements zip pairs;
//  - the file source has fewer files than there are workers;
//  - no batch() or padded_batch() follows the source, so the global batch is unknown;
//  - unbatch() follows the last batch: the elements are not global batches (a batch
//    before an unbatch only groups elements, and keeps its size).
// Throws ValueError when the global batch is smaller than num_workers ("FILE sharding:
// global batch 1 is smaller than the 2 workers"): some workers would get no rows, and
// for num_workers < 1 or index outside [0, num_workers).
// Positions of the result restore only into a pipeline over the same files (another
// worker's position is a ValueError from text_line_dataset naming both files).
[[nodiscard]] std::optional<Dataset> shard_by_file(const Dataset& dataset, int64_t num_workers, int64_t index,
                                                   std::string* why);

}  // namespace chorus::data
