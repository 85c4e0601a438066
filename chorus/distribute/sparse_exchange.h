// The exchange of embedding tables' sparse gradients under data parallelism: instead of
// all-reducing a whole table, each replica hands over the rows its batch read, and the
// update sees every replica's rows one after another in global replica order (as
// tf.distribute all-gathers IndexedSlices). Stateless functions; thread-safe.
#pragma once

#include "chorus/autograd/indexed_slices.h"
#include "chorus/distribute/communicator.h"

namespace chorus::distribute {

// One replica's rows of a table's gradient, each multiplied by `scale` (its share of the
// global batch): `sparse` when defined, else every row of `dense` (a table the step also
// used densely), else undefined (no gradient).
autograd::IndexedSlices scaled_rows(const Tensor& dense, const autograd::IndexedSlices& sparse, const Shape& shape,
                                    float scale);

// Every worker's rows (`local`, undefined where a worker has none) one after another in
// rank order, the same on every worker; undefined if no worker has any. Every worker must
// call it, in the same order for the same tables. Throws ValueError for a table of 2^31
// rows or more (row numbers travel as 32-bit integers).
autograd::IndexedSlices gather_across_workers(const autograd::IndexedSlices& local, const Shape& shape,
                                              Communicator& workers);

}  // namespace chorus::distribute
