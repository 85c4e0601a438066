// suggest_layout_map: a first LayoutMap for a built model on a mesh, from its layers'
// kinds and its variables' shapes, to print (LayoutMap::to_cpp), edit and hand to
// ModelParallel. Reads the model only; call it from one thread.
#pragma once

#include <string>

#include "chorus/distribution/layout_map.h"

namespace chorus::models {

class Model;

struct SuggestLayoutOptions {
  // The mesh axis the model is split over (its other axes split the batch).
  std::string model_dim_name = "model";
  // A batch axis to fully shard over what tensor parallelism leaves replicated: each
  // trainable floating variable whose first dimension divides over it gets ("batch",
  // None, ...), as distribution::Shard::kFull would lay it out. Empty: they stay replicated.
  std::string fully_shard_over;
};

// Megatron's tensor parallelism where the shapes divide by the model axis's size n:
// - two Dense layers in a row within one layer (an MLP, a Transformer's feedforward
//   block): the first's kernel and bias by columns, the second's kernel by rows, so the
//   pair costs one all-reduce; a Dense without a partner stays whole;
// - MultiHeadAttention: the query, key and value kernels and biases by heads, the output
//   projection by its heads rows;
// - an Embedding table by vocabulary rows (by columns where the rows do not divide).
// Everything else is replicated; a ReversibleEmbedding too, as its transpose is the
// output projection, unless `fully_shard_over` names the batch axis. Keys are the
// variables' exact paths, so every one matches. Throws ValueError naming the axis when
// the mesh has no `model_dim_name` or `fully_shard_over`, and when the model is not built.
distribution::LayoutMap suggest_layout_map(const Model& model, const distribution::DeviceMesh& mesh,
                                           const SuggestLayoutOptions& options = {});

}  // namespace chorus::models
