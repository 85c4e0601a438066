// FunctionalGraph: the layer graph of a functional model, from its symbolic inputs to
// its outputs, in an order where every node runs after the nodes it reads. Owns (shares)
// the nodes and, through them, the layers that were temporaries. Immutable after
// construction; run() may be called from several threads at once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/tree.h"
#include "chorus/layers/input_layer.h"
#include "chorus/layers/node.h"

namespace chorus::models {

class FunctionalGraph {
 public:
  // Throws ValueError when an output is not symbolic or depends on an Input that is not
  // among `inputs`. `model_name` prefixes errors.
  FunctionalGraph(const Tree& inputs, const Tree& outputs, const std::string& model_name);

  // Runs the graph on real inputs with the structure of the symbolic ones. Throws
  // ValueError naming the model and input when a shape or dtype differs (Keras's
  // input-compatibility message, as layers' InputSpec checks give).
  Tree run(const Tree& inputs, bool training) const;

  // Every distinct layer in run order, InputLayers first.
  const std::vector<layers::Layer*>& layers() const { return layers_; }

  // {"layers": [...], "nodes": [...], "inputs": ..., "outputs": ...}; see
  // functional_graph.cc. from_config rebuilds the graph with layers made by
  // layers::layer_from_config.
  nlohmann::json get_config() const;
  static std::pair<Tree, Tree> symbolic_from_config(const nlohmann::json& config);

 private:
  using Key = std::pair<const layers::Node*, size_t>;

  std::string model_name_;
  Tree inputs_;
  Tree outputs_;
  std::vector<std::shared_ptr<const layers::Node>> nodes_;  // topological order, inputs excluded
  std::vector<std::shared_ptr<const layers::Node>> input_nodes_;
  std::vector<layers::Layer*> layers_;
};

}  // namespace chorus::models
