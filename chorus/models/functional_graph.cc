// Graph config layout (saved in config.json by Model::save):
//   {"layers": [{"class_name", "config"}, ...],       each distinct layer once
//    "nodes":  [{"layer": i, "inputs": REFS}, ...],   topological order, Input nodes included
//    "inputs": REFS, "outputs": REFS}
// where REFS is a Tree of tensor references written as JSON: a leaf is
// {"ref": [node index, output index]}, a dict an object, a list an array.
// GCC 12 at -O3 reports a false maybe-uninitialized inside std::variant's map/vector
// alternatives when Trees are built in recursive lambdas; the values are initialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "chorus/models/functional_graph.h"

#include <set>
#include <unordered_map>

#include "chorus/core/error.h"
#include "chorus/layers/registry.h"

namespace chorus::models {
namespace {

const SymbolicOrigin& origin_of(const Tensor& t) { return *t.impl()->keras_history; }

std::string batch_shape_string(const Shape& shape) {
  std::string s = "(None";
  for (int i = 1; i < shape.rank(); ++i) s += ", " + std::to_string(shape[i]);
  return s + (shape.rank() == 1 ? ",)" : ")");
}

}  // namespace

FunctionalGraph::FunctionalGraph(const Tree& inputs, const Tree& outputs, const std::string& model_name)
    : model_name_(model_name), inputs_(inputs), outputs_(outputs) {
  std::set<const layers::Node*> input_set;
  for (const Tensor& t : inputs.flatten()) {
    if (!layers::is_symbolic(t) || origin_of(t).node->inputs.size() != 0 ||
        dynamic_cast<const layers::InputLayer*>(origin_of(t).node->layer) == nullptr) {
      throw_error<ValueError>("{}: every model input must come from layers::Input(); got a tensor of shape {}",
                              model_name, t.shape().to_string());
    }
    input_set.insert(origin_of(t).node.get());
    input_nodes_.push_back(origin_of(t).node);
  }
  // Depth-first from the outputs gives a topological order (a node after its inputs).
  std::set<const layers::Node*> visited;
  auto visit = [&](const std::shared_ptr<const layers::Node>& node, auto&& self) -> void {
    if (!visited.insert(node.get()).second) return;
    if (node->inputs.empty()) {
      if (!input_set.count(node.get())) {
        throw_error<ValueError>("{}: the outputs depend on input '{}', which is not among the model's inputs",
                                model_name_, node->layer->name());
      }
      return;
    }
    for (const Tensor& t : node->inputs.flatten()) self(origin_of(t).node, self);
    nodes_.push_back(node);
  };
  for (const Tensor& t : outputs.flatten()) {
    if (!layers::is_symbolic(t)) {
      throw_error<ValueError>(
          "{}: every model output must be produced by layers from layers::Input(); got a tensor of shape {} "
          "(wrap ops on symbolic tensors in a layer)",
          model_name, t.shape().to_string());
    }
    visit(origin_of(t).node, visit);
  }
  std::set<const layers::Layer*> seen;
  for (const auto& node : input_nodes_) {
    if (seen.insert(node->layer).second) layers_.push_back(node->layer);
  }
  for (const auto& node : nodes_) {
    if (seen.insert(node->layer).second) layers_.push_back(node->layer);
  }
}

Tree FunctionalGraph::run(const Tree& inputs, bool training) const {
  if (!inputs.same_structure(inputs_) && !(inputs_.is_list() && inputs_.size() == 1 && inputs.is_tensor())) {
    throw_error<ValueError>("{}: expected inputs structured as {}, got {}", model_name_, inputs_.to_string(),
                            inputs.to_string());
  }
  std::vector<Tensor> given = inputs.flatten();
  std::map<Key, Tensor> values;
  for (size_t i = 0; i < input_nodes_.size(); ++i) {
    const Tensor& spec = input_nodes_[i]->output_structure.tensor();
    const Tensor& x = given[i];
    bool shape_ok = x.rank() == spec.rank();
    for (int d = 1; shape_ok && d < spec.rank(); ++d) shape_ok = x.shape()[d] == spec.shape()[d];
    if (!shape_ok || x.dtype() != spec.dtype()) {
      throw_error<ShapeError>(
          "Input {} of layer \"{}\" is incompatible with the layer: expected shape={} {}, found shape={} {}", i,
          model_name_, batch_shape_string(spec.shape()), dtype_name(spec.dtype()), x.shape().to_string(),
          dtype_name(x.dtype()));
    }
    values[{input_nodes_[i].get(), 0}] = x;
  }
  auto lookup = [&](const Tensor& symbolic) { return values.at({origin_of(symbolic).node.get(), origin_of(symbolic).output_index}); };
  for (const auto& node : nodes_) {
    Tree node_inputs = node->inputs.map(lookup);
    std::vector<Tensor> outs = (*node->layer)(node_inputs, training).flatten();
    for (size_t i = 0; i < outs.size(); ++i) values[{node.get(), i}] = outs[i];
  }
  return outputs_.map(lookup);
}

nlohmann::json FunctionalGraph::get_config() const {
  std::unordered_map<const layers::Layer*, size_t> layer_index;
  nlohmann::json layers_json = nlohmann::json::array();
  for (size_t i = 0; i < layers_.size(); ++i) {
    layer_index[layers_[i]] = i;
    layers_json.push_back({{"class_name", layers_[i]->class_name()}, {"config", layers_[i]->get_config()}});
  }
  std::unordered_map<const layers::Node*, size_t> node_index;
  std::vector<const layers::Node*> order;
  for (const auto& n : input_nodes_) order.push_back(n.get());
  for (const auto& n : nodes_) order.push_back(n.get());
  for (size_t i = 0; i < order.size(); ++i) node_index[order[i]] = i;
  auto refs = [&](const Tree& tree, auto&& self) -> nlohmann::json {
    if (tree.is_tensor()) {
      const SymbolicOrigin& o = origin_of(tree.tensor());
      return {{"ref", {node_index.at(o.node.get()), o.output_index}}};
    }
    if (tree.is_dict()) {
      nlohmann::json out = nlohmann::json::object();
      for (const auto& [k, v] : tree.dict()) out[k] = self(v, self);
      return out;
    }
    nlohmann::json out = nlohmann::json::array();
    for (const Tree& v : tree.list()) out.push_back(self(v, self));
    return out;
  };
  nlohmann::json nodes_json = nlohmann::json::array();
  for (const layers::Node* n : order) {
    nodes_json.push_back({{"layer", layer_index.at(n->layer)}, {"inputs", n->inputs.empty() ? nlohmann::json() : refs(n->inputs, refs)}});
  }
  return {{"layers", layers_json}, {"nodes", nodes_json}, {"inputs", refs(inputs_, refs)},
          {"outputs", refs(outputs_, refs)}};
}

std::pair<Tree, Tree> FunctionalGraph::symbolic_from_config(const nlohmann::json& config) {
  std::vector<std::shared_ptr<layers::Layer>> made;
  for (const auto& layer_config : config.at("layers")) made.push_back(layers::layer_from_config(layer_config));
  std::vector<Tree> node_outputs;
  auto resolve = [&](const nlohmann::json& j, auto&& self) -> Tree {
    if (j.is_object() && j.contains("ref")) {
      size_t node = j["ref"][0].get<size_t>(), index = j["ref"][1].get<size_t>();
      if (node >= node_outputs.size()) throw_error<ValueError>("functional config: node {} is used before it is defined", node);
      return Tree(node_outputs[node].flatten().at(index));
    }
    if (j.is_object()) {
      Tree::Dict d;
      for (const auto& [k, v] : j.items()) d[k] = self(v, self);
      return Tree(d);
    }
    Tree::List l;
    for (const auto& v : j) l.push_back(self(v, self));
    return Tree(l);
  };
  for (const auto& node : config.at("nodes")) {
    auto& layer = made.at(node.at("layer").get<size_t>());
    if (node.at("inputs").is_null()) {
      auto* input = dynamic_cast<layers::InputLayer*>(layer.get());
      if (!input) throw_error<ValueError>("functional config: node without inputs must be an InputLayer");
      node_outputs.push_back(Tree(layers::Input(input->shape(), input->dtype(), input->name())));
    } else {
      // Calling through a shared_ptr copy keeps the layer alive in the node.
      Tree out = layers::call_shared(layer, resolve(node.at("inputs"), resolve));
      node_outputs.push_back(out);
    }
  }
  return {resolve(config.at("inputs"), resolve), resolve(config.at("outputs"), resolve)};
}

}  // namespace chorus::models
