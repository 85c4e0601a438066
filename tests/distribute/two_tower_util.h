// The two-tower model and ratings that the data-parallel, model-parallel and multi-worker
// tests train, and the weight and history comparisons they share.
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

// models::max_relative_difference, with a mismatch of the lists a test failure (and +inf).
inline double max_relative_difference(const std::vector<autograd::Variable>& a,
                                      const std::vector<autograd::Variable>& b) {
  try {
    return models::max_relative_difference(a, b);
  } catch (const ValueError& e) {
    ADD_FAILURE() << e.what();
    return std::numeric_limits<double>::infinity();
  }
}

// The reported loss and accuracy of every epoch agree to 1e-6 (the global batch's: an exact
// merge of the replicas' metric states).
inline void expect_same_history(const models::History& got, const models::History& want) {
  for (const char* key : {"loss", "sparse_categorical_accuracy"}) {
    const auto& have = got.history.at(key);
    const auto& expected = want.history.at(key);
    ASSERT_EQ(have.size(), expected.size()) << key;
    for (size_t e = 0; e < have.size(); ++e) EXPECT_NEAR(have[e], expected[e], 1e-6) << key << " epoch " << e;
  }
}

}  // namespace chorus::testing
