#include "chorus/layers/add.h"

#include <algorithm>

#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"

namespace chorus::layers {

Add::Add(AddOptions options) : Layer("Add", std::move(options.name)) {}

Tree Add::call(const Tree& inputs, bool /*training*/) {
  std::vector<Tensor> xs = detail::list_inputs(inputs, name());
  int max_rank = 0;
  for (const Tensor& x : xs) {
    if (x.rank() == 0) {
      throw_error<ShapeError>("{}: expected inputs with a batch axis, got shape {}", name(), x.shape().to_string());
    }
    if (x.dim(0) != xs[0].dim(0)) {
      throw_error<ShapeError>("{}: expected inputs with the same batch size, got shapes {} and {}", name(),
                              xs[0].shape().to_string(), x.shape().to_string());
    }
    max_rank = std::max(max_rank, x.rank());
  }
  // Keras: a lower-rank input gains axes after the batch axis until the ranks agree.
  for (Tensor& x : xs) {
    while (x.rank() < max_rank) x = ops::expand_dims(x, 1);
  }
  Shape shape = xs[0].shape();
  for (size_t k = 1; k < xs.size(); ++k) {
    try {
      shape = broadcast_shapes(shape, xs[k].shape(), "add");
    } catch (const ShapeError&) {
      throw_error<ShapeError>("{}: expected inputs whose shapes broadcast, got shapes {} and {}", name(),
                              shape.to_string(), xs[k].shape().to_string());
    }
  }
  if (xs.size() == 1) return detail::identity(xs[0]);
  Tensor sum = xs[0] + xs[1];
  for (size_t k = 2; k < xs.size(); ++k) sum = sum + xs[k];
  return sum;
}

std::shared_ptr<Add> Add::from_config(const nlohmann::json& config) {
  ConfigReader r("Add", config);
  auto layer = std::make_shared<Add>(AddOptions{.name = detail::config_name(r)});
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
