// The two-tower model and ratings that the data-parallel and multi-worker tests train,
// and the weight comparison they share.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/chorus.h"

namespace chorus::testing {

// The two-tower retrieval model of DESIGN.md §1 (without the retrieval layer).
class TwoTower : public models::Model {
 public:
  TwoTower(int64_t users, int64_t movies, int64_t dim = 8)
      : user_(add<layers::Embedding>(users, dim)), movie_(add<layers::Embedding>(movies, dim)) {}
  Tree call(const Tree& x, bool) override { return Tree{{"user_embeddings", (*user_)(x.tensor())}}; }
  Tensor compute_loss(const Tree&, const Tree& y, const Tree& y_pred, const Tensor&) override {
    Tensor scores = ops::sum(y_pred["user_embeddings"].tensor() * (*movie_)(y["movie_id"].tensor()), 1, true);
    return losses::MeanSquaredError()(ops::expand_dims(y["rating"].tensor(), -1), scores);
  }

 private:
  layers::Embedding* user_;
  layers::Embedding* movie_;
};

// n (user, {movie_id, rating}) rows for TwoTower(users, movies), the same in every
// process. Ids repeat within a batch (at most 97 users and 89 movies are used), so a
// table's gradient adds up rows.
inline data::Dataset two_tower_ratings(int64_t n, int64_t users_count = 30, int64_t movies_count = 40) {
  Generator gen(5);
  Tensor users = Tensor::empty({n}, kInt32), movies = Tensor::empty({n}, kInt32);
  for (int64_t i = 0; i < n; ++i) {
    users.data<int32_t>()[i] = static_cast<int32_t>((i * 7) % std::min<int64_t>(users_count, 97));
    movies.data<int32_t>()[i] = static_cast<int32_t>((i * 13) % std::min<int64_t>(movies_count, 89));
  }
  Tensor ratings = uniform(Shape{n}, gen, 0, 1);
  return data::Dataset::from_tensor_slices(Tree::list({users, Tree{{"movie_id", movies}, {"rating", ratings}}}));
}

// The largest |x - y| / max(|x|, |y|, 1e-3) over matching float32 variables; +inf, and
// a test failure, when the lists or two matching variables differ in size.
inline double max_relative_difference(const std::vector<autograd::Variable>& a,
                                      const std::vector<autograd::Variable>& b) {
  if (a.size() != b.size()) {
    ADD_FAILURE() << "max_relative_difference: " << a.size() << " variables against " << b.size();
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    const auto x = a[k].value().to_vector<float>(), y = b[k].value().to_vector<float>();
    if (x.size() != y.size()) {
      ADD_FAILURE() << "max_relative_difference: " << a[k].path() << " has " << x.size() << " values, "
                    << b[k].path() << " " << y.size();
      return std::numeric_limits<double>::infinity();
    }
    for (size_t i = 0; i < x.size(); ++i) {
      const double scale = std::max({std::abs(static_cast<double>(x[i])), std::abs(static_cast<double>(y[i])), 1e-3});
      worst = std::max(worst, std::abs(static_cast<double>(x[i]) - y[i]) / scale);
    }
  }
  return worst;
}

}  // namespace chorus::testing
