#include "chorus/models/object_paths.h"

#include <cassert>
#include <cctype>
#include <map>
#include <regex>

#include "chorus/layers/layer.h"
#include "chorus/optimizers/optimizer.h"

namespace chorus::models {
namespace {

// Keras's naming.to_snake_case, regular expressions and all, so that "EinsumDense" gives
// "einsum_dense" and "LSTMCell" "lstm_cell" as in Keras (Layer's auto-generated names use
// a simpler rule).
std::string to_snake_case(const std::string& class_name) {
  static const std::regex non_word(R"(\W+)"), word_start("(.)([A-Z][a-z]+)"), case_change("([a-z])([A-Z])");
  std::string out = std::regex_replace(class_name, non_word, "");
  out = std::regex_replace(out, word_start, "$1_$2");
  out = std::regex_replace(out, case_change, "$1_$2");
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string join(const std::string& prefix, const std::string& key) { return prefix.empty() ? key : prefix + "/" + key; }

// The name `layer` gave `weight` in add_weight(): its path after the layer's. A weight made
// in a constructor keeps the path it had before its layer moved under a parent; its last
// component is then the name (add_weight names have no '/').
std::string weight_name(const layers::Layer& layer, const autograd::Variable& weight) {
  const std::string prefix = layer.path() + "/";
  const std::string& path = weight.path();
  return path.starts_with(prefix) ? path.substr(prefix.size()) : weight.name();
}

// Every variable's and layer's object path under a root, the first path where one is
// reached twice (a shared layer or a tied weight), as Keras's visited_saveables keeps.
struct Paths {
  std::unordered_map<const void*, std::string> variables;  // by Variable::id()
  std::unordered_map<const layers::Layer*, std::string> layers;
};

// Visits `layer` (at `path`) as Layer::weights() does: its own weights, then each
// sublayer in order. Keras's _save_container_state: the index counts per parent.
void visit(const layers::Layer& layer, const std::string& path, Paths& paths) {
  for (const autograd::Variable& v : layer.own_weights()) paths.variables.try_emplace(v.id(), join(path, weight_name(layer, v)));
  std::map<std::string, int> used_names;
  for (const layers::Layer* sublayer : layer.layers()) {
    std::string key = to_snake_case(sublayer->class_name());
    if (auto [it, first] = used_names.try_emplace(key, 0); !first) {
      key += '_';  // appended apart: GCC 12 warns (-Wrestrict) on "_" + to_string(n) here
      key += std::to_string(++it->second);
    }
    const std::string sub_path = join(path, key);
    // Keras counts a layer met again too, but saves it only where it first met it.
    if (paths.layers.try_emplace(sublayer, sub_path).second) visit(*sublayer, sub_path, paths);
  }
}

Paths paths_under(const layers::Layer& root) {
  Paths paths;
  visit(root, "", paths);
  return paths;
}

}  // namespace

std::vector<std::string> weight_object_paths(const layers::Layer& root) {
  const Paths paths = paths_under(root);
  std::vector<std::string> out;
  for (const autograd::Variable& v : root.weights()) {
    const auto it = paths.variables.find(v.id());
    assert(it != paths.variables.end() && "weights() and the walk visit the same layers");
    out.push_back(it == paths.variables.end() ? v.path() : it->second);
  }
  return out;
}

std::unordered_map<const layers::Layer*, std::string> layer_object_paths(const layers::Layer& root) {
  return paths_under(root).layers;
}

std::vector<std::string> optimizer_object_paths(const optimizers::Optimizer& optimizer, const layers::Layer& model) {
  const std::vector<autograd::Variable> weights = model.weights();
  const std::vector<std::string> weight_paths = weight_object_paths(model);
  std::unordered_map<const void*, std::string> slot_keys;
  for (size_t i = 0; i < weights.size(); ++i) {
    for (const autograd::Variable& slot : optimizer.slots_of(weights[i])) {
      slot_keys.emplace(slot.id(), "optimizer/" + weight_paths[i] + "/" + slot.name());
    }
  }
  std::vector<std::string> out;
  for (const autograd::Variable& v : optimizer.variables()) {
    const auto it = slot_keys.find(v.id());
    out.push_back(it == slot_keys.end() ? v.path() : it->second);
  }
  return out;
}

std::vector<std::string> legacy_paths(const std::vector<autograd::Variable>& variables) {
  std::vector<std::string> out;
  out.reserve(variables.size());
  for (const autograd::Variable& v : variables) out.push_back(v.path());
  return out;
}

io::NamedTensors with_keys(io::NamedTensors tensors, const std::vector<std::string>& keys) {
  assert(tensors.size() == keys.size());
  for (size_t i = 0; i < tensors.size(); ++i) tensors[i].first = keys[i];
  return tensors;
}

}  // namespace chorus::models
