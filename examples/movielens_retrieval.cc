// The keras-rs retrieval tutorial in C++: a two-tower model (user and movie embedding
// tables) trained for 50 epochs on MovieLens 100K with Adagrad, validated every 5
// epochs, then the top 10 movies for the tutorial's sample users.
//
//   movielens_retrieval [DATA_DIR]
//
// DATA_DIR holds u.data and u.item (e.g. ../shared/data/ml-100k); by default the copy in
// chorus's data cache, downloaded first if absent (`chorus data fetch movielens-100k`).
#include <iostream>

#include "tools/chorus/recipes/retrieval_tutorial.h"

int main(int argc, char** argv) {
  namespace ex = chorus::recipes;
  try {
    ex::RetrievalTutorialOptions options;
    if (argc > 1) options.data_dir = argv[1];
    ex::RetrievalTutorialResult result = ex::run_retrieval_tutorial(options);
    ex::print_recommendations(result.recommendations);
  } catch (const std::exception& e) {
    std::cerr << "movielens_retrieval: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
