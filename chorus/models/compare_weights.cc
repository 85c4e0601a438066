#include "chorus/models/compare_weights.h"

#include <algorithm>
#include <cmath>

#include "chorus/core/error.h"

namespace chorus::models {

double max_relative_difference(const std::vector<autograd::Variable>& a, const std::vector<autograd::Variable>& b) {
  if (a.size() != b.size()) {
    throw_error<ValueError>("max_relative_difference: {} variables against {}", a.size(), b.size());
  }
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].shape() != b[k].shape()) {
      throw_error<ValueError>("max_relative_difference: '{}' has shape {}, '{}' {}", a[k].path(),
                              a[k].shape().to_string(), b[k].path(), b[k].shape().to_string());
    }
    const auto x = a[k].value().to_vector<double>(), y = b[k].value().to_vector<double>();
    for (size_t i = 0; i < x.size(); ++i) {
      const double scale = std::max({std::abs(x[i]), std::abs(y[i]), 1e-3});
      worst = std::max(worst, std::abs(x[i] - y[i]) / scale);
    }
  }
  return worst;
}

}  // namespace chorus::models
