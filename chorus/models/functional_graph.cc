// Graph config layout (saved in config.json by Model::save):
//   {"layers": [{"class_name", "config"}, ...],       each distinct layer once
//    "nodes":  [{"layer": i, "inputs": REFS}, ...],   topological order, Input nodes included
//    "inputs": REFS, "outputs": REFS}
// where REFS is a Tree of tensor references written as JSON: a leaf is
// {"ref": [node index, output index]}, a dict an object, a list an array.
// GCC 12 at -O3 reports a false maybe-uninitialized inside std::variant's map/vector
// alternatives when Trees are built in recursive lambdas; the values are initialised.
// (Clang has no such warning and would warn about the unknown name.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "chorus/models/functional_graph.h"

#include <set>
#include <unordered_map>

#include "chorus/core/error.h"
#include "chorus/core/error_context.h"
#include "chorus/layers/registry.h"
#include "chorus/ops/elementwise.h"

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
    // Keras converts each input to its Input's dtype (uint8 pixels into a float32 model);
    // only strings and numbers do not convert into each other.
    const bool dtype_ok = x.dtype() == spec.dtype() || (x.dtype() != kString && spec.dtype() != kString);
    if (!shape_ok || !dtype_ok) {
      throw_error<ValueError>(
          "Input {} of layer \"{}\" is incompatible with the layer: expected shape={} {}, found shape={} {}", i,
          model_name_, batch_shape_string(spec.shape()), dtype_name(spec.dtype()), x.shape().to_string(),
          dtype_name(x.dtype()));
    }
    values[{input_nodes_[i].get(), 0}] = x.dtype() == spec.dtype() ? x : ops::cast(x, spec.dtype());
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

namespace {

// Deeper REFS than this are refused rather than recursed into: a saved graph nests a few
// levels, and a hostile config.json must not exhaust the stack.
constexpr int kMaxRefsDepth = 64;

// config[key] as an array, or a ValueError naming "config.<key>".
const nlohmann::json& graph_config_array(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end()) throw_error<ValueError>("config.{}: missing", key);
  if (!it->is_array()) throw_error<ValueError>("config.{}: expected a list, found {}", key, it->type_name());
  return *it;
}

// An index field of a config ("config.nodes[3].layer"): a non-negative integer below
// `bound` (`what` names the list it indexes).
size_t graph_config_index(const nlohmann::json& value, const std::string& field, size_t bound, const char* what) {
  if (!value.is_number_integer()) throw_error<ValueError>("{}: expected an index, found {}", field, value.dump());
  if (value.is_number_unsigned() && value.get<uint64_t>() < bound) return value.get<size_t>();
  throw_error<ValueError>("{}: index {} but there are {} {}", field, value.dump(), bound, what);
}

// The Tree that a REFS value (see the top of this file) names among the outputs of the
// nodes made so far. `field` names `j` in errors.
Tree resolve_graph_refs(const nlohmann::json& j, const std::vector<Tree>& node_outputs, const std::string& field,
                        int depth = 0) {
  if (depth > kMaxRefsDepth) throw_error<ValueError>("{}: nested deeper than {} levels", field, kMaxRefsDepth);
  if (j.is_object() && j.contains("ref")) {
    const nlohmann::json& ref = j["ref"];
    if (!ref.is_array() || ref.size() != 2) {
      throw_error<ValueError>("{}.ref: expected [node index, output index], found {}", field, ref.dump());
    }
    const size_t node = graph_config_index(ref[0], field + ".ref[0]", node_outputs.size(), "nodes before it");
    const std::vector<Tensor> outputs = node_outputs[node].flatten();
    return Tree(outputs[graph_config_index(ref[1], field + ".ref[1]", outputs.size(), "outputs of that node")]);
  }
  if (j.is_object()) {
    Tree::Dict d;
    for (const auto& [k, v] : j.items()) d[k] = resolve_graph_refs(v, node_outputs, field + "." + k, depth + 1);
    return Tree(d);
  }
  if (!j.is_array()) throw_error<ValueError>("{}: expected a ref, a list or a dict, found {}", field, j.dump());
  Tree::List l;
  for (size_t i = 0; i < j.size(); ++i) {
    l.push_back(resolve_graph_refs(j[i], node_outputs, fmt::format("{}[{}]", field, i), depth + 1));
  }
  return Tree(l);
}

// The outputs of node `index` of the config, calling its layer on the nodes before it.
Tree make_graph_node(const nlohmann::json& node, size_t index, const std::vector<std::shared_ptr<layers::Layer>>& made,
                     const std::vector<Tree>& node_outputs) {
  const std::string field = fmt::format("config.nodes[{}]", index);
  if (!node.is_object() || !node.contains("layer") || !node.contains("inputs")) {
    throw_error<ValueError>("{}: expected {{\"layer\": index, \"inputs\": refs}}, found {}", field, node.dump());
  }
  const auto& layer = made[graph_config_index(node["layer"], field + ".layer", made.size(), "layers")];
  if (node["inputs"].is_null()) {
    auto* input = dynamic_cast<layers::InputLayer*>(layer.get());
    if (!input) {
      throw_error<ValueError>("{}: a node without inputs must be an InputLayer, found {} '{}'", field,
                              layer->class_name(), layer->name());
    }
    return Tree(layers::Input(input->shape(), input->dtype(), input->name()));
  }
  Tree inputs = resolve_graph_refs(node["inputs"], node_outputs, field + ".inputs");
  // Calling through a shared_ptr copy keeps the layer alive in the node.
  return with_error_context(field, [&] { return layers::call_shared(layer, inputs); });
}

}  // namespace

std::pair<Tree, Tree> FunctionalGraph::symbolic_from_config(const nlohmann::json& config) {
  if (!config.is_object()) throw_error<ValueError>("config: expected an object, found {}", config.type_name());
  const nlohmann::json& layers_json = graph_config_array(config, "layers");
  std::vector<std::shared_ptr<layers::Layer>> made;
  for (size_t i = 0; i < layers_json.size(); ++i) {
    made.push_back(with_error_context(fmt::format("config.layers[{}]", i),
                                      [&] { return layers::layer_from_config(layers_json[i]); }));
  }
  const nlohmann::json& nodes_json = graph_config_array(config, "nodes");
  std::vector<Tree> node_outputs;
  for (size_t i = 0; i < nodes_json.size(); ++i) node_outputs.push_back(make_graph_node(nodes_json[i], i, made, node_outputs));
  for (const char* key : {"inputs", "outputs"}) {
    if (!config.contains(key)) throw_error<ValueError>("config.{}: missing", key);
  }
  return {resolve_graph_refs(config["inputs"], node_outputs, "config.inputs"),
          resolve_graph_refs(config["outputs"], node_outputs, "config.outputs")};
}

}  // namespace chorus::models
