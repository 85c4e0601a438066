// Object paths: the keys saved files give a model's variables ("dense_1/kernel"), made from
// where each layer sits in the model rather than from its process-wide auto-generated name,
// so that two instances of one model class read each other's files. Free functions; they
// read the model, which must not change meanwhile.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/io/safetensors.h"

namespace chorus::layers {
class Layer;
}
namespace chorus::optimizers {
class Optimizer;
}

namespace chorus::models {

// Keras 3's rule (saving_lib.py, _save_container_state): a layer is keyed by its class name
// in snake case ("TransformerEncoder" -> "transformer_encoder"), with "_<N>" for the N-th
// repeat of that key among the sublayers of one parent ("dense", "dense_1", "dropout",
// "dense_2"); a sublayer's key goes under its parent's; a weight's own name comes last.
// Kept from Keras: the index counts per parent, never globally, and a variable or layer
// reached twice keeps its first path. Left out, as chorus has no attribute names and
// names its weights: Keras's "layers/" container prefix and "vars/<i>" weight indices, and
// its addressing of a subclassed model's layers by attribute name (chorus counts them
// like a list, in the order add<L>() made them).
//
// The object path of each of root.weights(), in that order (relative to `root`).
std::vector<std::string> weight_object_paths(const layers::Layer& root);

// The object path of every layer under `root` (not root itself), by address.
std::unordered_map<const layers::Layer*, std::string> layer_object_paths(const layers::Layer& root);

// The key of each of optimizer.variables(), in that order: "optimizer/<object path of the
// variable>/<slot>" for a slot of one of model.weights(), and the variable's own path
// otherwise ("optimizer/iterations").
std::vector<std::string> optimizer_object_paths(const optimizers::Optimizer& optimizer, const layers::Layer& model);

// The keys of `variables` before object paths: Variable::path(), from the layers' global
// names. Files written by chorus before them are keyed so.
std::vector<std::string> legacy_paths(const std::vector<autograd::Variable>& variables);

// `tensors` (one per variable, as whole_values returns them) renamed to `keys`.
// REQUIRES: tensors.size() == keys.size().
io::NamedTensors with_keys(io::NamedTensors tensors, const std::vector<std::string>& keys);

// The safetensors metadata entry that marks a file keyed by object paths. A file without
// it was written before them (or by another tool).
inline constexpr const char* kKeysMetadata = "keys";
inline constexpr const char* kObjectPathKeys = "object_paths";

}  // namespace chorus::models
