// Dataset pipeline overhead on synthetic MovieLens-shaped columns (100,000 ratings: two
// int32 ids, a float32 rating, an int64 timestamp), with no file parsing, on one core:
//   uncached        from_tensor_slices + the tutorial's map + shuffle(100000) + batch(1000)
//   cached_batches  a pass over .batch(1000).cache() after the first pass filled it
//   cached_then_batch  .cache().batch(1000): elements served one by one, then batched
// Elements per second (median of repeats) against the targets (1M/s uncached, 5M/s
// cached) and against hand-written loops doing the same work in the same run (one
// permutation and plain gathers; a loop over stored batches). One JSON line per case.
#include <algorithm>
#include <random>

#include "bench/bench_util.h"
#include "chorus/core/creation.h"
#include "chorus/data/dataset.h"

namespace chorus {
namespace {

constexpr int64_t kRatings = 100'000;

Tree columns() {
  std::mt19937 rng(1);
  std::vector<int32_t> users(kRatings), movies(kRatings);
  std::vector<float> ratings(kRatings);
  std::vector<int64_t> times(kRatings);
  for (int64_t i = 0; i < kRatings; ++i) {
    users[i] = static_cast<int32_t>(rng() % 943 + 1);
    movies[i] = static_cast<int32_t>(rng() % 1682 + 1);
    ratings[i] = static_cast<float>(rng() % 5 + 1);
    times[i] = 874'724'710 + static_cast<int64_t>(rng() % 100'000'000);
  }
  const Shape shape{kRatings};
  return Tree{{"movie_id", from_values(movies, shape)},
              {"timestamp", from_values(times, shape)},
              {"user_id", from_values(users, shape)},
              {"user_rating", from_values(ratings, shape)}};
}

// The tutorial's preprocess_rating: x = user id, y = {movie_id, rating scaled to [0, 1]}.
Tree preprocess(const Tree& rating) {
  const float scaled = (rating["user_rating"].tensor().item<float>() - 1.0f) / 4.0f;
  return Tree::list({rating["user_id"], Tree{{"movie_id", rating["movie_id"]}, {"rating", scalar(scaled)}}});
}

int64_t run_pass(const data::Dataset& ds) {
  int64_t n = 0;
  for (auto it = ds.iterator(); auto batch = it.next();) n += (*batch)[0].tensor().dim(0);
  return n;
}

// The same work without a pipeline: preprocess whole columns, one permutation, gather.
int64_t by_hand(const Tree& cols) {
  const int32_t* user = cols["user_id"].tensor().data<int32_t>();
  const int32_t* movie = cols["movie_id"].tensor().data<int32_t>();
  const float* raw = cols["user_rating"].tensor().data<float>();
  std::vector<float> scaled(kRatings);
  for (int64_t i = 0; i < kRatings; ++i) scaled[i] = (raw[i] - 1.0f) / 4.0f;
  std::vector<int64_t> order(kRatings);
  for (int64_t i = 0; i < kRatings; ++i) order[i] = i;
  std::mt19937_64 rng(42);
  for (int64_t i = kRatings - 1; i > 0; --i) {
    std::swap(order[i], order[std::uniform_int_distribution<int64_t>(0, i)(rng)]);
  }
  int64_t total = 0;
  for (int64_t begin = 0; begin < kRatings; begin += 1000) {
    const int64_t size = std::min<int64_t>(1000, kRatings - begin);
    Tensor x = Tensor::empty({size}, kInt32), m = Tensor::empty({size}, kInt32), r = Tensor::empty({size});
    for (int64_t j = 0; j < size; ++j) {
      const int64_t k = order[begin + j];
      x.data<int32_t>()[j] = user[k], m.data<int32_t>()[j] = movie[k], r.data<float>()[j] = scaled[k];
    }
    total += size;
  }
  return total;
}

void report(const std::string& name, double seconds, double target, const std::string& reference,
            double reference_seconds) {
  bench::emit({{"bench", "pipeline"},
               {"case", name},
               {"threads", 1},
               {"elements", kRatings},
               {"seconds", seconds},
               {"elements_per_s", kRatings / seconds},
               {"target_per_s", target},
               {"ratio_to_target", kRatings / seconds / target},
               {"reference", reference},
               {"reference_seconds", reference_seconds},
               {"ratio_to_reference", reference_seconds / seconds}});
}

}  // namespace
}  // namespace chorus

int main() {
  using namespace chorus;
  const Tree cols = columns();
  auto pipeline = [&] {
    return data::Dataset::from_tensor_slices(cols).map(preprocess).shuffle(kRatings, 42, false);
  };

  const double hand = bench::median_seconds([&] { by_hand(cols); }, 1, 7, 1);
  const double uncached = bench::median_seconds([&] { run_pass(pipeline().batch(1000)); }, 1, 7, 1);
  report("uncached", uncached, 1e6, "hand-written loop: preprocess columns, permute, gather", hand);

  const data::Dataset cached = pipeline().batch(1000).cache();
  std::vector<Tree> stored;
  for (auto it = cached.iterator(); auto batch = it.next();) stored.push_back(*batch);
  const double loop = bench::median_seconds([&] {
    int64_t n = 0;
    for (const Tree& batch : stored) n += Tree(batch)[0].tensor().dim(0);
    if (n != kRatings) std::abort();
  }, 10, 7, 1);
  report("cached_batches", bench::median_seconds([&] { run_pass(cached); }, 10, 7, 1), 5e6,
         "a loop copying the same stored batches", loop);

  const data::Dataset elements = pipeline().cache();
  run_pass(elements.batch(1000));  // fills the cache
  report("cached_then_batch", bench::median_seconds([&] { run_pass(elements.batch(1000)); }, 1, 7, 1), 5e6,
         "hand-written loop: preprocess columns, permute, gather", hand);
  return 0;
}
