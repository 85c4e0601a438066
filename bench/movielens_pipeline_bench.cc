// MovieLens 100K input pipeline, as the keras-rs retrieval tutorial builds it:
//   ratings(dir).map(preprocess).shuffle(100000, seed 42, no reshuffle).batch(1000)
// on one core. Measures (ratings/s, median of repeats):
//   parse     load_ratings alone (u.data -> columns)
//   uncached  a full epoch: parse + map + shuffle + batch, the Dataset built inside the timing
//   cached    a pass over .cache() after the first pass filled it
// Each is compared with its target (1M/s uncached, 5M/s cached; >= 10M lines/s parse) and
// with a hand-written loop that does the same work without the pipeline (parse, the
// preprocessing on whole columns, a Fisher-Yates shuffle, gathering batches), measured in
// the same run: that ratio is what the per-element pipeline costs.
// Usage: movielens_pipeline_bench [ml-100k dir] (default $CHORUS_SHARED_DATA/ml-100k or
// <repo>/../shared/data/ml-100k).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/creation.h"
#include "chorus/data/line_reader.h"
#include "chorus/data/movielens.h"

namespace chorus {
namespace {

namespace ml = datasets::movielens_100k;

std::string default_dir() {
  if (const char* env = std::getenv("CHORUS_SHARED_DATA")) return std::string(env) + "/ml-100k";
  return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared/data/ml-100k").string();
}

// The tutorial's preprocess_rating: x = user id, y = {movie_id, rating scaled to [0, 1]}.
Tree preprocess(const Tree& rating) {
  const float scaled = (rating["user_rating"].tensor().item<float>() - 1.0f) / 4.0f;
  return Tree::list({rating["user_id"], Tree{{"movie_id", rating["movie_id"]}, {"rating", scalar(scaled)}}});
}

data::Dataset pipeline(const std::string& dir) {
  return ml::ratings(dir).map(preprocess).shuffle(100'000, /*seed=*/42, /*reshuffle_each_iteration=*/false).batch(1000);
}

// Runs one pass; returns the number of ratings in it.
int64_t run_pass(const data::Dataset& dataset) {
  int64_t ratings = 0;
  for (auto it = dataset.iterator(); auto batch = it.next();) ratings += (*batch)[0].tensor().dim(0);
  return ratings;
}

// The same work with no pipeline: columns, vectorised preprocessing, one permutation,
// batches gathered with plain loops.
int64_t reference_epoch(const std::string& dir) {
  const Tree columns = ml::load_ratings(dir);
  const Tensor& users = columns["user_id"].tensor();
  const int64_t n = users.dim(0);
  const int32_t* user = users.data<int32_t>();
  const int32_t* movie = columns["movie_id"].tensor().data<int32_t>();
  const float* raw = columns["user_rating"].tensor().data<float>();
  std::vector<float> scaled(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) scaled[i] = (raw[i] - 1.0f) / 4.0f;
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(42);
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[std::uniform_int_distribution<int64_t>(0, i)(rng)]);
  int64_t total = 0;
  for (int64_t begin = 0; begin < n; begin += 1000) {
    const int64_t size = std::min<int64_t>(1000, n - begin);
    Tensor x = Tensor::empty({size}, kInt32), m = Tensor::empty({size}, kInt32), r = Tensor::empty({size});
    int32_t* xs = x.data<int32_t>();
    int32_t* ms = m.data<int32_t>();
    float* rs = r.data<float>();
    for (int64_t j = 0; j < size; ++j) {
      const int64_t k = order[begin + j];
      xs[j] = user[k], ms[j] = movie[k], rs[j] = scaled[k];
    }
    total += size;
  }
  return total;
}

// Reading u.data and counting its lines: the floor under any parser.
int64_t read_and_count(const std::string& dir) {
  const std::string text = data::read_file(dir + "/u.data");
  return std::count(text.begin(), text.end(), '\n');
}

void report(const std::string& name, double seconds, int64_t ratings, double target, const std::string& reference,
            double reference_seconds) {
  const double rate = ratings / seconds;
  bench::emit({{"bench", "movielens_pipeline"},
               {"case", name},
               {"threads", 1},
               {"ratings", ratings},
               {"seconds", seconds},
               {"ratings_per_s", rate},
               {"target_per_s", target},
               {"ratio_to_target", rate / target},
               {"reference", reference},
               {"reference_seconds", reference_seconds},
               {"ratio_to_reference", reference_seconds / seconds}});
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus;
  const std::string dir = argc > 1 ? argv[1] : default_dir();
  backend::cpu::set_intra_op_threads(1);
  const int64_t n = ml::load_ratings(dir)["user_id"].tensor().dim(0);

  const double read_only = bench::median_seconds([&] { read_and_count(dir); }, 1, 7, 1);
  const double parse = bench::median_seconds([&] { ml::load_ratings(dir); }, 1, 7, 1);
  report("parse", parse, n, 10e6, "read u.data and count lines", read_only);

  const double by_hand = bench::median_seconds([&] { reference_epoch(dir); }, 1, 7, 1);
  int64_t seen = 0;
  const double uncached = bench::median_seconds([&] { seen = run_pass(pipeline(dir)); }, 1, 5, 1);
  if (seen != n) std::fprintf(stderr, "uncached pass saw %lld ratings, expected %lld\n", (long long)seen, (long long)n);
  report("uncached_epoch", uncached, n, 1e6, "hand-written loop: parse, preprocess, permute, gather", by_hand);

  const data::Dataset cached = pipeline(dir).cache();
  std::vector<Tree> batches;  // the reference: handing out stored batches
  for (auto it = cached.iterator(); auto batch = it.next();) batches.push_back(*batch);  // fills the cache
  const double stored = bench::median_seconds([&] {
    int64_t total = 0;
    for (const Tree& batch : batches) total += Tree(batch)[0].tensor().dim(0);
    seen = total;
  }, 1, 7, 1);
  const double from_cache = bench::median_seconds([&] { seen = run_pass(cached); }, 1, 7, 1);
  if (seen != n) std::fprintf(stderr, "cached pass saw %lld ratings, expected %lld\n", (long long)seen, (long long)n);
  report("cached_epoch", from_cache, n, 5e6, "a loop over a vector of the same batches", stored);
  return 0;
}
