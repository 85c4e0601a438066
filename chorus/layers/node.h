// Node: one call of a layer on symbolic tensors while a functional model is being
// defined (Keras's Node). Output tensors point back at their node through
// SymbolicOrigin, so a model can walk from its outputs to its inputs. Immutable once
// made; shared by the symbolic tensors and the model built from them. is_symbolic tells
// such tensors apart.
#pragma once

#include <cstddef>
#include <memory>

#include "chorus/core/tree.h"

namespace chorus::layers {

class Layer;

struct Node {
  Layer* layer = nullptr;        // the layer called
  std::shared_ptr<Layer> owner;  // set when the graph owns the layer (a temporary was called)
  Tree inputs;                   // the symbolic inputs (empty for an Input placeholder)
  Tree output_structure;         // the outputs' structure, leaves are not symbolic
};

// True if `tensor` is a placeholder of a functional model under construction (it has a
// Node as origin); for a tree, if any of its leaves is.
bool is_symbolic(const Tensor& tensor);
bool is_symbolic(const Tree& tree);

}  // namespace chorus::layers

namespace chorus {

struct SymbolicOrigin {
  std::shared_ptr<const layers::Node> node;
  size_t output_index = 0;  // which leaf of the node's flattened outputs
};

}  // namespace chorus
