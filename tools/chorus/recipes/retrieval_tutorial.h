// The keras-rs two-tower retrieval tutorial's model, pipeline and inference, with options:
// examples/movielens_retrieval.cc calls them in the tutorial's order, `chorus train
// movielens-retrieval` runs them with flags, the tests and benchmarks share them. Results are
// values the caller owns; a RetrievalModel is one per thread.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chorus/chorus.h"
#include "chorus/recsys/brute_force_retrieval.h"
#include "tools/chorus/recipes/run_options.h"
#include "tools/chorus/recipes/phase_times.h"

namespace chorus::recipes {

// The tutorial's RetrievalModel: the query tower is a user embedding table, the
// candidate tower a movie embedding table, and a BruteForceRetrieval over the movie
// table itself (shared, so it always retrieves with the current weights). Outputs
// {"user_embeddings": (B, dim)} in training, plus "predictions": (B, 10) int32 movie ids
// otherwise. The loss is the MSE between <user, movie> and the scaled rating.
//
// Evaluation: the tutorial skips the retrieval in training "as the predictions are not
// used"; in Keras its validation still computes them (call with training=False), which
// costs more than the loss itself (a (B, movies) score matrix and a top-10 per row). Here
// test_step skips them for the same reason unless `retrieve_in_evaluation` (or compiled
// metrics, which may read them) asks for Keras's behaviour; val_loss is the same either way.
class RetrievalModel : public models::Model {
 public:
  // `distributed_embedding`: each tower is a DistributedEmbedding table (keras-rs), which
  // a multi-worker job splits by rows across its workers; else a keras Embedding.
  RetrievalModel(int64_t num_users, int64_t num_candidates, int64_t embedding_dimension = 32,
                 bool retrieve_in_evaluation = false, bool distributed_embedding = false);

  // x: (B,) user ids.
  Tree call(const Tree& x, bool training) override;
  // y: {"movie_id": (B,) ids, "rating": (B,) float32 in [0, 1]}.
  Tensor compute_loss(const Tree& x, const Tree& y, const Tree& y_pred, const Tensor& sample_weight = {}) override;
  // Keras's test_step, computing only the user embeddings the loss needs (see above).
  models::Logs test_step(const Tree& batch) override;

  // The towers' tables (num_users or num_candidates, dim): this worker's rows of a split one.
  const autograd::Variable& user_table() const;
  const autograd::Variable& candidate_table() const;
  recsys::BruteForceRetrieval& retrieval() const { return *retrieval_; }

 protected:
  // Builds both tables, then points the retrieval at the movie table (no copy).
  void build(const Tree& inputs) override;

 private:
  // A tower: a keras Embedding, or a one-feature DistributedEmbedding initialised as one.
  layers::Layer* add_tower(const std::string& feature, int64_t rows, int64_t dim, bool distributed_embedding);

  layers::Layer* user_;
  layers::Layer* movie_;
  recsys::BruteForceRetrieval* retrieval_;
  losses::MeanSquaredError loss_fn_;
  bool retrieve_in_evaluation_;
};

struct RetrievalDatasets {
  // Batches of (user_id (B,) int32, {"movie_id": (B,) int32, "rating": (B,) float32}).
  data::Dataset train, test;
  int64_t users_count = 0;   // the largest user id (943)
  int64_t movies_count = 0;  // the number of movies (1,682)
};

// The tutorial's pipeline over the ml-100k folder `dir`: rating -> (user_id, {movie_id,
// rating = (user_rating - 1) / 4}), shuffle(100,000, seed, no reshuffle), the first
// 80,000 for training and the next 20,000 for testing, batch(batch_size), cache().
RetrievalDatasets get_retrieval_datasets(const std::string& dir, int64_t batch_size = 1000, uint64_t seed = 42);

struct RetrievalTutorialOptions {
  // The ml-100k folder (u.data, u.item). Empty (default): the copy `chorus data fetch
  // movielens-100k` keeps in the data cache, downloaded first if absent.
  std::string data_dir;
  int epochs = 50;
  int64_t batch_size = 1000;
  int validation_freq = 5;  // the tutorial validates every 5 epochs ("evaluation takes a bit of time")
  double learning_rate = 0.2;
  int verbose = 1;  // as FitOptions::verbose
  // Seeds the shuffle (the train/test split) and the initial weights.
  uint64_t seed = 42;
  // Replicas (DataParallel): 1 trains on the calling thread, 0 on every local device,
  // N > 1 on the first N.
  int devices = 1;
  // Validation computes the predictions too, as Keras's test_step does (same val_loss,
  // a slower run); see RetrievalModel.
  bool retrieve_in_validation = false;
  // Rows of each table; 0: the data's users and movies (+1 for id 0). Larger tables hold
  // ids the data never uses, as a catalogue grown to millions would.
  int64_t table_rows = 0;
  // The towers as DistributedEmbedding tables: a multi-worker job splits each by rows, every
  // worker keeping its half (and its half of Adagrad's accumulators). The recommendations
  // then retrieve from the whole movie table, gathered from the workers. Not with
  // retrieve_in_validation across workers (which would retrieve from one worker's rows).
  bool distributed_embedding = false;
  // Users to recommend for at the end: the tutorial's printed ones.
  std::vector<int32_t> sample_users = {793, 188, 865, 710, 721, 451, 228, 175};
  RunOptions run;
  // Where the run's phases add their seconds (chorus train --timings); null: not timed.
  PhaseTimes* timings = nullptr;
};

struct Recommendations {
  int32_t user_id = 0;
  std::vector<std::string> titles;  // the top 10, best first
};

struct RetrievalTutorialResult {
  models::History history;
  std::vector<Recommendations> recommendations;  // one per sample user, in order
  int64_t movie_rows_kept = 0;  // this worker's rows of the movie table: all unless split
};

// Loads the data, builds and compiles the model (Adagrad(learning_rate)), fits it,
// then predicts the top 10 movies for options.sample_users and maps them to titles.
RetrievalTutorialResult run_retrieval_tutorial(const RetrievalTutorialOptions& options);

// Inference: the top 10 movies `model` retrieves for each of `user_ids`, by title from the
// ml-100k folder `dir` ("" for an id without one). A movie table split across workers is
// gathered whole first (a collective: every worker calls this).
std::vector<Recommendations> recommend(RetrievalModel& model, const std::string& dir,
                                       const std::vector<int32_t>& user_ids);

// The tutorial's printout: "==Recommended movies for user 793==" then one title a line.
void print_recommendations(const std::vector<Recommendations>& recommendations);

}  // namespace chorus::recipes
