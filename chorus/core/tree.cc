#include "chorus/core/tree.h"

#include <fmt/format.h>

namespace chorus {

const char* Tree::kind() const {
  if (is_tensor()) return "a tensor";
  if (is_dict()) return "a dict";
  if (is_list()) return "a list";
  return "empty";
}

const Tensor& Tree::tensor() const {
  if (!is_tensor()) throw_error<ValueError>("Tree::tensor: expected a tensor, but the tree is {}", kind());
  return std::get<Tensor>(node_);
}

const Tree::Dict& Tree::dict() const {
  if (!is_dict()) throw_error<ValueError>("Tree::dict: expected a dict, but the tree is {}", kind());
  return std::get<Dict>(node_);
}

const Tree::List& Tree::list() const {
  if (!is_list()) throw_error<ValueError>("Tree::list: expected a list, but the tree is {}", kind());
  return std::get<List>(node_);
}

Tree& Tree::operator[](const std::string& key) {
  if (empty()) node_ = Dict{};
  if (!is_dict()) throw_error<ValueError>("Tree: cannot look up key '{}': the tree is {}", key, kind());
  return std::get<Dict>(node_)[key];
}

const Tree& Tree::operator[](const std::string& key) const {
  const Dict& d = dict();
  auto it = d.find(key);
  if (it == d.end()) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : d) keys.push_back(k);
    throw_error<ValueError>("Tree: no key '{}'; the dict has keys [{}]", key, fmt::join(keys, ", "));
  }
  return it->second;
}

bool Tree::contains(const std::string& key) const { return is_dict() && dict().count(key) > 0; }

const Tree& Tree::operator[](size_t index) const {
  const List& l = list();
  if (index >= l.size()) throw_error<IndexError>("Tree: index {} is out of range for a list of {}", index, l.size());
  return l[index];
}

Tree& Tree::operator[](size_t index) {
  return const_cast<Tree&>(static_cast<const Tree&>(*this)[index]);
}

size_t Tree::size() const {
  if (is_tensor()) return 1;
  if (is_dict()) return dict().size();
  if (is_list()) return list().size();
  return 0;
}

std::vector<Tensor> Tree::flatten() const {
  std::vector<Tensor> leaves;
  std::function<void(const Tree&)> visit = [&](const Tree& t) {
    if (t.is_tensor()) leaves.push_back(t.tensor());
    if (t.is_dict()) for (const auto& [k, v] : t.dict()) visit(v);
    if (t.is_list()) for (const auto& v : t.list()) visit(v);
  };
  visit(*this);
  return leaves;
}

Tree Tree::map(const std::function<Tensor(const Tensor&)>& fn) const {
  if (is_tensor()) return Tree(fn(tensor()));
  if (is_dict()) {
    Dict out;
    for (const auto& [k, v] : dict()) out.emplace(k, v.map(fn));
    return Tree(std::move(out));
  }
  if (is_list()) {
    List out;
    for (const auto& v : list()) out.push_back(v.map(fn));
    return Tree(std::move(out));
  }
  return Tree();
}

Tree Tree::unflatten_from(const std::vector<Tensor>& leaves, size_t& next) const {
  if (is_tensor()) return Tree(leaves[next++]);
  if (is_dict()) {
    Dict out;
    for (const auto& [k, v] : dict()) out.emplace(k, v.unflatten_from(leaves, next));
    return Tree(std::move(out));
  }
  if (is_list()) {
    List out;
    for (const auto& v : list()) out.push_back(v.unflatten_from(leaves, next));
    return Tree(std::move(out));
  }
  return Tree();
}

Tree Tree::unflatten(const std::vector<Tensor>& leaves) const {
  const size_t expected = flatten().size();
  if (leaves.size() != expected) {
    throw_error<ValueError>("Tree::unflatten: the structure has {} leaves, got {} tensors", expected, leaves.size());
  }
  size_t next = 0;
  return unflatten_from(leaves, next);
}

bool Tree::same_structure(const Tree& other) const {
  if (node_.index() != other.node_.index()) return false;
  if (is_dict()) {
    const Dict &a = dict(), &b = other.dict();
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia->first != ib->first || !ia->second.same_structure(ib->second)) return false;
    }
  }
  if (is_list()) {
    const List &a = list(), &b = other.list();
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].same_structure(b[i])) return false;
    }
  }
  return true;
}

std::string Tree::to_string() const {
  if (is_tensor()) {
    const Tensor& t = tensor();
    return t.defined() ? fmt::format("{} {}", t.shape().to_string(), dtype_name(t.dtype())) : "undefined";
  }
  std::vector<std::string> parts;
  if (is_dict()) {
    for (const auto& [k, v] : dict()) parts.push_back(fmt::format("\"{}\": {}", k, v.to_string()));
    return fmt::format("{{{}}}", fmt::join(parts, ", "));
  }
  if (is_list()) {
    for (const auto& v : list()) parts.push_back(v.to_string());
    return fmt::format("[{}]", fmt::join(parts, ", "));
  }
  return "empty";
}

}  // namespace chorus
