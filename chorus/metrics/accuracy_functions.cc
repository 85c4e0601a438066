#include "chorus/metrics/accuracy_functions.h"

#include <vector>

#include "chorus/losses/loss_util.h"

namespace chorus::metrics::internal {
namespace {

// y_true and y_pred shapes after Keras's rank alignment, required equal.
Shape aligned_shape(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  check_defined(name, y_true, y_pred);
  const auto [t, p] = losses::internal::squeeze_or_expand_shapes(y_true.shape(), y_pred.shape());
  if (t != p) {
    throw_error<ShapeError>("{}: y_true shape {} and y_pred shape {} do not match", name, y_true.shape().to_string(),
                            y_pred.shape().to_string());
  }
  return p;
}

// Checks y_true and y_pred are one shape (..., classes) with classes >= 1.
void check_categorical(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  check_defined(name, y_true, y_pred);
  if (y_true.shape() != y_pred.shape()) {
    throw_error<ShapeError>("{}: y_true shape {} and y_pred shape {} do not match", name, y_true.shape().to_string(),
                            y_pred.shape().to_string());
  }
  if (y_pred.rank() == 0 || y_pred.dim(-1) == 0) {
    throw_error<ShapeError>("{}: expected y_pred of shape (..., classes) with classes >= 1, got {}", name,
                            y_pred.shape().to_string());
  }
}

// The labels' shape for sparse metrics: y_pred.shape[:-1], y_true may add a trailing 1.
Shape sparse_label_shape(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  check_defined(name, y_true, y_pred);
  if (y_pred.rank() == 0 || y_pred.dim(-1) == 0) {
    throw_error<ShapeError>("{}: expected y_pred of shape (..., classes) with classes >= 1, got {}", name,
                            y_pred.shape().to_string());
  }
  const Shape batch = batch_shape_of(y_pred.shape());
  Shape labels = y_true.shape();
  if (labels.rank() == y_pred.rank() && labels.dim(-1) == 1) labels = batch_shape_of(labels);
  if (labels != batch) {
    Shape with_one = batch;
    with_one.push_back(1);
    throw_error<ShapeError>("{}: expected y_true of shape {} or {} to match y_pred of shape {}, got {}", name,
                            batch.to_string(), with_one.to_string(), y_pred.shape().to_string(),
                            y_true.shape().to_string());
  }
  return batch;
}

}  // namespace

SampleValues accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  const Shape shape = aligned_shape(name, y_true, y_pred);
  const std::vector<double> t = y_true.to_vector<double>(), p = y_pred.to_vector<double>();
  SampleValues out{std::vector<double>(t.size()), shape};
  for (size_t i = 0; i < t.size(); ++i) out.values[i] = round_to(y_pred.dtype(), t[i]) == p[i] ? 1.0 : 0.0;
  return out;
}

SampleValues binary_accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred,
                                    double threshold) {
  const Shape shape = aligned_shape(name, y_true, y_pred);
  const std::vector<double> t = y_true.to_vector<double>(), p = y_pred.to_vector<double>();
  const double cut = static_cast<float>(threshold);  // Keras compares with a float32 threshold
  SampleValues out{std::vector<double>(t.size()), shape};
  for (size_t i = 0; i < t.size(); ++i) out.values[i] = t[i] == (p[i] > cut ? 1.0 : 0.0) ? 1.0 : 0.0;
  return out;
}

SampleValues categorical_accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  check_categorical(name, y_true, y_pred);
  const std::vector<int64_t> t = row_argmax(y_true), p = row_argmax(y_pred);
  SampleValues out{std::vector<double>(t.size()), batch_shape_of(y_pred.shape())};
  for (size_t i = 0; i < t.size(); ++i) out.values[i] = t[i] == p[i] ? 1.0 : 0.0;
  return out;
}

SampleValues sparse_categorical_accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred) {
  const Shape shape = sparse_label_shape(name, y_true, y_pred);
  const std::vector<double> labels = y_true.to_vector<double>();
  const std::vector<int64_t> p = row_argmax(y_pred);
  SampleValues out{std::vector<double>(labels.size()), shape};
  for (size_t i = 0; i < labels.size(); ++i) out.values[i] = labels[i] == static_cast<double>(p[i]) ? 1.0 : 0.0;
  return out;
}

SampleValues top_k_categorical_accuracy_values(const std::string& name, const Tensor& y_true, const Tensor& y_pred,
                                               int64_t k) {
  check_categorical(name, y_true, y_pred);
  const std::vector<int64_t> t = row_argmax(y_true);
  return {in_top_k(std::vector<double>(t.begin(), t.end()), y_pred, k), batch_shape_of(y_pred.shape())};
}

SampleValues sparse_top_k_categorical_accuracy_values(const std::string& name, const Tensor& y_true,
                                                      const Tensor& y_pred, int64_t k) {
  const Shape shape = sparse_label_shape(name, y_true, y_pred);
  return {in_top_k(y_true.to_vector<double>(), y_pred, k), shape};
}

}  // namespace chorus::metrics::internal
