// Normalization: shifts and scales inputs to mean 0 and standard deviation 1 with a mean
// and variance that are given or learned by adapt() (keras.layers.Normalization).
// Learned statistics are non-trainable weights — "mean" and "variance" in the kept axes'
// shape, and "count", the number of values behind each (int64; Keras keeps it at 0) —
// saved and restored with the model's weights; given ones live in the config. Safe to
// call from several threads once built (dataset.map workers, replicas); adapt() must not
// run while another thread calls the layer.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chorus/data/dataset.h"
#include "chorus/layers/layer.h"

namespace chorus::layers {

struct NormalizationOptions {
  // The axes that keep a mean and variance per index (negative: from the end); the
  // statistics are taken over the other axes. Empty: one scalar mean and variance for
  // all values (Keras's axis=None). Default: the last axis, the features.
  std::vector<int> axis = {-1};
  // Given statistics instead of adapt(): both or neither, float tensors of equal shape
  // whose rank is at most the number of kept axes, broadcast to those axes from the
  // right (a scalar for all). Undefined: learn them with adapt().
  Tensor mean;
  Tensor variance;
  // Undo the normalization instead: x * sqrt(variance) + mean.
  bool invert = false;
  std::string name;  // empty: "normalization", "normalization_1", ...
};

// Input: a numeric tensor of any shape whose rank covers `axis`, with the dims on the
// kept axes the build saw — or one element of such a batch (its rank one less, as in a
// dataset.map before batch()) when the batch axis is not kept. Output: float32, the
// input's shape:
//   (x - mean) / max(sqrt(variance), 1e-7)   (invert: mean + x * max(sqrt(variance), 1e-7)).
// Before adapt() the learned statistics are mean 0 and variance 1.
//
//   layers::Normalization norm({.axis = {}});
//   norm.adapt(from_values({1.f, 2.f, 3.f, 4.f, 5.f}));
//   norm(from_values({1.f, 2.f, 3.f}));  // [-1.4142135, -0.70710677, 0]
class Normalization : public Layer {
 public:
  // Throws ValueError when only one of mean and variance is given, their shapes differ,
  // or the mean's rank exceeds the number of kept axes.
  explicit Normalization(NormalizationOptions options = {});

  // Learns the mean and (biased) variance of `data` over the non-kept axes; builds the
  // layer from its shape first if needed. Throws ValueError naming the layer for
  // an empty tensor, for a layer given mean and variance, or for kept dims that differ
  // from the built ones; DTypeError for strings.
  void adapt(const Tensor& data);
  // The same over a dataset of batches (a tensor, or an (x, y, ...) list whose first
  // element is used; a rank-1 element is one sample), combining the batches' statistics
  // exactly; at most `steps` batches. Throws as above, also for an empty dataset (naming
  // it) or an infinite one without steps.
  void adapt(const data::Dataset& data, std::optional<int64_t> steps = std::nullopt);

  // The statistics in their kept shape; undefined before build when learned.
  Tensor mean() const;
  Tensor variance() const;

  nlohmann::json get_config() const override;
  static std::shared_ptr<Normalization> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Normalization>(std::move(*this)); }

 protected:
  // Creates the weights (learned statistics) or broadcasts the given ones. Throws
  // ValueError naming the layer for an axis outside the input's rank, a kept batch axis
  // of a symbolic input (its size is unknown), or given statistics that do not broadcast.
  void build(const Tree& inputs) override;
  // Throws DTypeError for a string tensor, ShapeError for another rank or kept dims.
  Tree call(const Tree& inputs, bool training) override;

 private:
  void check_adapt_shape(const Shape& shape, const std::string& what) const;
  // Throws DTypeError naming the layer and `what` for a string dtype.
  void check_numeric(DType dtype, const char* what) const;
  // Accumulated statistics of one or more batches, per kept index.
  struct Moments {
    double count = 0;
    std::vector<double> mean, m2;
  };
  Moments moments_of(const Tensor& batch) const;
  void assign(const Moments& moments);

  NormalizationOptions options_;
  int rank_ = 0;
  std::vector<int> keep_;               // the kept axes, resolved and sorted
  std::vector<int64_t> kept_shape_;     // the input dims on keep_
  std::vector<int64_t> broadcast_shape_;  // kept dims, 1 elsewhere
  Tensor given_mean_, given_variance_;  // broadcast_shape_, when given
  Variable mean_, variance_, count_;    // when learned
};

}  // namespace chorus::layers
