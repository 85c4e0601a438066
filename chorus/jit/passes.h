// The rewrites a traced Graph goes through before it runs, each on its own (tests run
// them one by one on small graphs). Stateless; thread-safe on distinct graphs.
#pragma once

#include "chorus/jit/graph.h"

namespace chorus::jit {

// Drops the nodes whose writes nothing needs: no result, no external buffer (a variable's
// memory) and no node with effects (Node::effects) depends on them. Returns how many nodes it dropped.
int eliminate_dead_code(Graph& graph);

// Joins each run of consecutive elementwise nodes (unary, or binary whose operands are
// the output's size or a single element) of one element count into a kFused node that
// makes one pass over memory in blocks of kFusedBlock elements. A member's output that no
// node outside the run reads and that is no result lives only in the block (Node::internal)
// and gets no buffer. Returns how many nodes the fused nodes replaced.
int fuse_elementwise(Graph& graph);

// Elements per block of a fused pass (a block of every operand fits in L1 together), and
// how many values a fused node keeps only in the block at most.
inline constexpr int64_t kFusedBlock = 512;
inline constexpr int kMaxInternalValues = 16;

}  // namespace chorus::jit
