#include "chorus/models/suggest_layout_map.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "chorus/core/error.h"
#include "chorus/models/model.h"

namespace chorus::models {
namespace {

using Axes = std::vector<std::optional<std::string>>;

class Suggester {
 public:
  Suggester(distribution::LayoutMap& map, std::string axis, int64_t size)
      : map_(map), axis_(std::move(axis)), size_(size) {}

  void visit(const layers::Layer& layer) {
    if (!seen_.insert(&layer).second) return;
    const std::string& kind = layer.class_name();
    if (kind == "MultiHeadAttention") return attention(layer);
    if (kind == "Embedding") return embedding(layer);
    std::vector<const layers::Layer*> dense;
    for (const layers::Layer* sublayer : layer.layers()) {
      if (sublayer->class_name() == "Dense") dense.push_back(sublayer);
    }
    pair_dense_layers(dense);
    for (const layers::Layer* sublayer : layer.layers()) visit(*sublayer);
  }

 private:
  bool divides(int64_t n) const { return n % size_ == 0; }
  std::optional<autograd::Variable> own(const layers::Layer& layer, const std::string& name) const {
    for (const autograd::Variable& v : layer.own_weights()) {
      if (v.name() == name) return v;
    }
    return std::nullopt;
  }
  void lay_out(const layers::Layer& layer, const std::string& name, Axes axes) {
    const std::optional<autograd::Variable> v = own(layer, name);
    if (v && v->shape().rank() == static_cast<int>(axes.size())) map_[v->path()] = distribution::TensorLayout(axes);
  }

  // Consecutive Dense layers whose shapes divide: a column-split one, then a row-split one.
  void pair_dense_layers(const std::vector<const layers::Layer*>& dense) {
    for (size_t i = 0; i + 1 < dense.size(); ++i) {
      const std::optional<autograd::Variable> first = own(*dense[i], "kernel"), second = own(*dense[i + 1], "kernel");
      if (!first || !second || first->shape().rank() != 2 || second->shape().rank() != 2) continue;
      const int64_t hidden = first->shape()[1];
      if (second->shape()[0] != hidden || !divides(hidden)) continue;
      lay_out(*dense[i], "kernel", {std::nullopt, axis_});
      lay_out(*dense[i], "bias", {axis_});
      lay_out(*dense[i + 1], "kernel", {axis_, std::nullopt});
      ++i;
    }
  }

  // Kernels (model, heads, head_dim) and biases (heads, head_dim) of the projections in,
  // (heads, head_dim, model) of the one out.
  void attention(const layers::Layer& layer) {
    const layers::Layer& query = layer.get_layer("query");
    const std::optional<autograd::Variable> kernel = own(query, "kernel");
    if (!kernel || kernel->shape().rank() != 3 || !divides(kernel->shape()[1])) return;
    for (const char* name : {"query", "key", "value"}) {
      lay_out(layer.get_layer(name), "kernel", {std::nullopt, axis_, std::nullopt});
      lay_out(layer.get_layer(name), "bias", {axis_, std::nullopt});
    }
    lay_out(layer.get_layer("attention_output"), "kernel", {axis_, std::nullopt, std::nullopt});
  }

  void embedding(const layers::Layer& layer) {
    const std::optional<autograd::Variable> table = own(layer, "embeddings");
    if (!table || table->shape().rank() != 2) return;
    if (divides(table->shape()[0])) {
      lay_out(layer, "embeddings", {axis_, std::nullopt});
    } else if (divides(table->shape()[1])) {
      lay_out(layer, "embeddings", {std::nullopt, axis_});
    }
  }

  distribution::LayoutMap& map_;
  std::string axis_;
  int64_t size_;
  std::set<const layers::Layer*> seen_;
};

// The size of mesh axis `name`. Throws ValueError naming it, and `what` it is for, when
// the mesh lacks it.
int64_t axis_size(const distribution::DeviceMesh& mesh, const std::string& name, const char* what) {
  const auto& names = mesh.axis_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) throw_error<ValueError>("suggest_layout_map: the device mesh has no axis '{}' {}", name, what);
  return mesh.shape()[static_cast<size_t>(it - names.begin())];
}

}  // namespace

distribution::LayoutMap suggest_layout_map(const Model& model, const distribution::DeviceMesh& mesh,
                                           const SuggestLayoutOptions& options) {
  const int64_t model_size = axis_size(mesh, options.model_dim_name, "to split the model over");
  const int64_t batch_size =
      options.fully_shard_over.empty() ? 0 : axis_size(mesh, options.fully_shard_over, "to fully shard over");
  if (!model.built()) {
    throw_error<ValueError>("suggest_layout_map: model '{}' is not built; call it on a batch (or build it) first",
                            model.name());
  }
  distribution::LayoutMap map(mesh);
  Suggester(map, options.model_dim_name, model_size).visit(model);
  if (batch_size == 0) return map;
  for (const autograd::Variable& v : model.weights()) {
    if (map.get(v.path()) || !distribution::splits_fully(v, batch_size)) continue;
    Axes axes(static_cast<size_t>(v.shape().rank()));
    axes[0] = options.fully_shard_over;
    map[v.path()] = distribution::TensorLayout(axes);
  }
  return map;
}

}  // namespace chorus::models
