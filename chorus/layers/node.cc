#include "chorus/layers/node.h"

namespace chorus::layers {

bool is_symbolic(const Tensor& tensor) { return tensor.defined() && tensor.impl()->keras_history != nullptr; }

bool is_symbolic(const Tree& tree) {
  if (tree.empty()) return false;
  for (const Tensor& t : tree.flatten()) {
    if (is_symbolic(t)) return true;
  }
  return false;
}

}  // namespace chorus::layers
