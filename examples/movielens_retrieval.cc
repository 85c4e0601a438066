// The keras-rs tutorial "Retrieve movies using a two tower model (data parallel training)"
// (../shared/seeds/keras-rs-data-parallel-retrieval.txt) in C++.
//
//   movielens_retrieval [DATA_DIR]
//
// DATA_DIR holds u.data and u.item (e.g. ../shared/data/ml-100k); by default the copy in
// chorus's data cache, downloaded first if absent (`chorus data fetch movielens-100k`).
#include <iostream>
#include <map>

#include "chorus/chorus.h"

namespace ch = chorus;
namespace ml = chorus::datasets::movielens_100k;

// Preprocess the dataset: the input is the user id, the labels are the movie id and the
// rating scaled to between 0 and 1.
ch::Tree preprocess_rating(const ch::Tree& x) {
  const double rating = (x["user_rating"].tensor().item<double>() - 1.0) / 4.0;
  return ch::Tree::list({x["user_id"], ch::Tree{{"movie_id", x["movie_id"]}, {"rating", ch::scalar(rating)}}});
}

// The two-tower retrieval model: a query tower for users and a candidate tower for movies.
class RetrievalModel : public ch::Model {
 public:
  RetrievalModel(int64_t num_users, int64_t num_candidates, int64_t embedding_dimension = 32)
      // Our query tower, simply an embedding table.
      : user_embedding_(add<ch::layers::Embedding>(num_users, embedding_dimension)),
        // Our candidate tower, simply an embedding table.
        candidate_embedding_(add<ch::layers::Embedding>(num_candidates, embedding_dimension)),
        // The layer that performs the retrieval.
        retrieval_(add<ch::recsys::BruteForceRetrieval>(/*k=*/10, /*return_scores=*/false)) {}

  void build(const ch::Tree& inputs) override {
    user_embedding_->build_from(inputs);
    candidate_embedding_->build_from(inputs);
    // In this case, the candidates are directly the movie embeddings.
    // We take a shortcut and directly reuse the variable.
    retrieval_->set_candidate_embeddings(candidate_embedding_->embeddings());
  }

  ch::Tree call(const ch::Tree& inputs, bool training) override {
    ch::Tree result{{"user_embeddings", (*user_embedding_)(inputs.tensor())}};
    // Skip the retrieval of top movies during training as the predictions are not used.
    if (!training) result["predictions"] = (*retrieval_)(result["user_embeddings"].tensor());
    return result;
  }

  ch::Tensor compute_loss(const ch::Tree& /*x*/, const ch::Tree& y, const ch::Tree& y_pred,
                          const ch::Tensor& sample_weight) override {
    const ch::Tensor& user_embeddings = y_pred["user_embeddings"].tensor();
    ch::Tensor candidate_embeddings = (*candidate_embedding_)(y["movie_id"].tensor());
    ch::Tensor labels = ch::ops::expand_dims(y["rating"].tensor(), -1);
    // Compute the affinity score by multiplying the two embeddings.
    ch::Tensor scores = ch::ops::sum(ch::ops::multiply(user_embeddings, candidate_embeddings), 1, /*keepdims=*/true);
    return loss_fn_(labels, scores, sample_weight);
  }

 private:
  ch::layers::Embedding* user_embedding_;
  ch::layers::Embedding* candidate_embedding_;
  ch::recsys::BruteForceRetrieval* retrieval_;
  ch::losses::MeanSquaredError loss_fn_;
};

int main(int argc, char** argv) try {
  // Data parallelism: a DataParallel distribution over every local device.
  std::vector<ch::Device> devices = ch::devices();
  ch::distribution::DataParallel data_parallel(devices);
  // Set the global distribution strategy (until the scope ends): models compiled now use it.
  auto scope = data_parallel.scope();

  // Ratings data with user and movie data; features of all the available movies.
  const std::string dir = argc > 1 ? argv[1] : ch::data::fetch("movielens-100k");
  const ch::Tree ratings = ml::load_ratings(dir);
  const ml::Movies movies = ml::load_movies(dir);
  // User, movie counts for defining vocabularies.
  const auto users_count = ch::ops::max(ratings["user_id"].tensor()).item<int64_t>();
  const auto movies_count = static_cast<int64_t>(movies.size());
  // Preprocess the dataset, and split it into train-test datasets.
  auto shuffled_ratings = ch::data::Dataset::from_tensor_slices(ratings)
                              .map(preprocess_rating)
                              .shuffle(100'000, /*seed=*/42, /*reshuffle_each_iteration=*/false);
  auto train_ratings = shuffled_ratings.take(80'000).batch(1000).cache();
  auto test_ratings = shuffled_ratings.skip(80'000).take(20'000).batch(1000).cache();

  // Train the model; evaluation takes a bit of time, so only every 5 epochs.
  RetrievalModel model(users_count + 1, movies_count + 1);
  model.compile({.optimizer = ch::optimizers::Adagrad(/*learning_rate=*/0.2)});
  model.fit(train_ratings, {.epochs = 50, .validation_data = test_ratings, .validation_freq = 5});

  // Inference: the top 10 movies for a few users, by title.
  std::map<int32_t, std::string> movie_id_to_movie_title = {{0, ""}};  // because id 0 is not in the dataset
  const std::vector<int32_t> movie_ids = movies.movie_id.to_vector<int32_t>();
  for (size_t i = 0; i < movies.size(); ++i) movie_id_to_movie_title[movie_ids[i]] = movies.titles[i];
  const std::vector<int32_t> user_ids = {793, 188, 865, 710, 721, 451, 228, 175};  // the users the tutorial shows
  const auto n = static_cast<int64_t>(user_ids.size());
  const ch::Tensor predictions = model.predict(ch::from_values<int32_t>(user_ids, {n}))["predictions"].tensor();
  for (int64_t i = 0; i < n; ++i) {
    std::cout << "\n==Recommended movies for user " << user_ids[static_cast<size_t>(i)] << "==\n";
    for (int32_t movie_id : predictions.first_axis_slice(i, i + 1).to_vector<int32_t>()) {
      std::cout << movie_id_to_movie_title[movie_id] << "\n";
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "movielens_retrieval: " << e.what() << "\n";
  return 1;
}
