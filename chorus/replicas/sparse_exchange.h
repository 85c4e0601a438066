// The exchange of embedding tables' rows under data parallelism: instead of all-reducing a
// whole table, each replica hands over the rows its batch read, and the update sees every
// replica's rows one after another in global replica order (as tf.distribute all-gathers
// IndexedSlices); for a table split by rows across workers, the lookups and gradient rows
// go to the worker keeping each row. Stateless functions; thread-safe.
#pragma once

#include <span>

#include "chorus/autograd/indexed_slices.h"
#include "chorus/comm/communicator.h"

namespace chorus::replicas {

// One replica's rows of a table's gradient, each multiplied by `scale` (its share of the
// global batch): `sparse` when defined, else every row of `dense` (a table the step also
// used densely), else undefined (no gradient).
autograd::IndexedSlices scaled_rows(const Tensor& dense, const autograd::IndexedSlices& sparse, const Shape& shape,
                                    float scale);

// Every worker's rows (`local`, undefined where a worker has none) one after another in
// rank order, the same on every worker; undefined if no worker has any. Every worker must
// call it, in the same order for the same tables.
autograd::IndexedSlices gather_across_workers(const autograd::IndexedSlices& local, const Shape& shape,
                                              comm::Communicator& workers);

// Tables split by rows across workers (DistributedEmbedding): each of `workers` workers
// keeps rows_per_worker(rows, workers) = ceil(rows / workers) rows, worker w rows
// [w * that, (w + 1) * that) (the last one's block padded past the table's end).
int64_t rows_per_worker(int64_t rows, int workers);

// The rows `ids` (each in [0, the table's rows)) of a table split by rows across
// `workers`, of which `block` (rows [begin, begin + block rows), float32) is this
// worker's: each row is asked of its keeper (an all-to-all of ids), which answers with it
// (an all-to-all of rows). Returns (ids.size(), row...) float32 in ids' order. Every
// worker calls it, in the same order for the same tables.
Tensor lookup_rows(const Tensor& block, int64_t begin, std::span<const int64_t> ids, comm::Communicator& workers);

// The rows of a table's gradient (`local`: this worker's, whole-table indices; undefined:
// none) sent to the workers that keep them (one all-to-all). Returns, on every worker,
// the rows of its block (`block_shape`, starting at whole-table row `begin`) from every
// worker in rank order, indexed within the block: defined, perhaps with no rows. Every
// worker calls it, in the same order for the same tables.
autograd::IndexedSlices send_rows_to_keepers(const autograd::IndexedSlices& local, int64_t begin,
                                             const Shape& block_shape, comm::Communicator& workers);

}  // namespace chorus::replicas
