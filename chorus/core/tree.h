// Tree: a tensor, or a dict (string keys, sorted) or list of Trees — a batch, a model's
// inputs and outputs (tf.nest's structures). A value type: copying copies the structure
// and shares the tensors (Tensor copies are shallow). Not synchronised.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "chorus/core/tensor.h"

namespace chorus {

class Tree {
 public:
  using Dict = std::map<std::string, Tree>;
  using List = std::vector<Tree>;

  Tree() = default;  // empty: neither tensor, dict nor list
  Tree(Tensor tensor) : node_(std::move(tensor)) {}  // NOLINT: a tensor is a leaf tree
  Tree(std::initializer_list<std::pair<const std::string, Tree>> items) : node_(Dict(items)) {}
  Tree(Dict dict) : node_(std::move(dict)) {}  // NOLINT
  Tree(List list) : node_(std::move(list)) {}  // NOLINT

  // A list tree: Tree::list({x, y}) is the (x, y) pair of a supervised batch.
  static Tree list(std::initializer_list<Tree> items) { return Tree(List(items)); }

  bool empty() const { return std::holds_alternative<std::monostate>(node_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(node_); }
  bool is_dict() const { return std::holds_alternative<Dict>(node_); }
  bool is_list() const { return std::holds_alternative<List>(node_); }

  // The leaf tensor. Throws ValueError naming what this tree is instead.
  const Tensor& tensor() const;
  const Dict& dict() const;
  const List& list() const;

  // Dict access. The non-const form turns an empty tree into a dict and inserts missing
  // keys (like Python's `out["predictions"] = ...`); the const form throws ValueError
  // listing the keys that exist.
  Tree& operator[](const std::string& key);
  const Tree& operator[](const std::string& key) const;
  Tree& operator[](const char* key) { return (*this)[std::string(key)]; }
  const Tree& operator[](const char* key) const { return (*this)[std::string(key)]; }
  bool contains(const std::string& key) const;
  // List access. Throws IndexError.
  const Tree& operator[](size_t index) const;
  Tree& operator[](size_t index);
  Tree& operator[](int index) { return (*this)[static_cast<size_t>(index)]; }
  const Tree& operator[](int index) const { return (*this)[static_cast<size_t>(index)]; }
  // Number of children of a dict or list, 1 for a tensor, 0 when empty.
  size_t size() const;

  // The leaves in a fixed order: dicts by sorted key, lists by index (tf.nest.flatten).
  std::vector<Tensor> flatten() const;
  // A tree of the same structure with fn applied to every leaf (tf.nest.map_structure).
  Tree map(const std::function<Tensor(const Tensor&)>& fn) const;
  // The same structure with `leaves` (as returned by flatten) put back in order.
  // Throws ValueError if the count differs.
  Tree unflatten(const std::vector<Tensor>& leaves) const;
  // Whether both trees have the same nesting and keys (leaves are not compared).
  bool same_structure(const Tree& other) const;

  // e.g. {"label": (64,) int32, "pixels": (64, 784) float32}.
  std::string to_string() const;

 private:
  const char* kind() const;
  Tree unflatten_from(const std::vector<Tensor>& leaves, size_t& next) const;

  std::variant<std::monostate, Tensor, Dict, List> node_;
};

}  // namespace chorus
