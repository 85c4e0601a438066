// The keras-rs tutorial "Retrieve movies using a two tower model (data parallel training)"
// (../shared/seeds/keras-rs-data-parallel-retrieval.txt) in C++.
//
//   movielens_retrieval [DATA_DIR]
//
// DATA_DIR holds u.data and u.item (e.g. ../shared/data/ml-100k); by default the copy in
// chorus's data cache, downloaded first if absent (`chorus data fetch movielens-100k`).
//
// The tutorial's preprocess_rating, RetrievalModel and inference are in
// tools/chorus/recipes/retrieval_tutorial.cc, which `chorus train movielens-retrieval` runs
// too; this file is the tutorial's script, in its order.
#include <iostream>

#include "chorus/chorus.h"
#include "tools/chorus/recipes/retrieval_tutorial.h"

namespace ch = chorus;
using ch::recipes::RetrievalModel;

int main(int argc, char** argv) try {
  // Data parallelism: a DataParallel distribution over every local device.
  std::vector<ch::Device> devices = ch::devices();
  ch::distribution::DataParallel data_parallel(devices);
  // Set the global distribution strategy (until the scope ends): models compiled now use it.
  auto scope = data_parallel.scope();

  // Ratings data with user and movie data; features of all the available movies.
  const std::string dir = argc > 1 ? argv[1] : ch::data::fetch("movielens-100k");
  // preprocess_rating (x: the user id; y: the movie id and the rating scaled to [0, 1]),
  // shuffle(100,000, seed 42, once), the first 80,000 to train and the next 20,000 to
  // test, batch(1000), cache(); with the user and movie counts for the vocabularies.
  const ch::recipes::RetrievalDatasets data = ch::recipes::get_retrieval_datasets(dir);

  // The two-tower model: a user embedding table (the query tower), a movie embedding
  // table (the candidate tower), and a BruteForceRetrieval of the top 10 movies.
  RetrievalModel model(data.users_count + 1, data.movies_count + 1);
  // Train the model; evaluation takes a bit of time, so only every 5 epochs.
  model.compile({.optimizer = ch::optimizers::Adagrad(/*learning_rate=*/0.2)});
  model.fit(data.train, {.epochs = 50, .validation_data = data.test, .validation_freq = 5});

  // Inference: the top 10 movies for the users the tutorial shows, by title.
  const std::vector<int32_t> user_ids = {793, 188, 865, 710, 721, 451, 228, 175};
  ch::recipes::print_recommendations(ch::recipes::recommend(model, dir, user_ids));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "movielens_retrieval: " << e.what() << "\n";
  return 1;
}
