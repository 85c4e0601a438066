// MovieLens 100K (GroupLens "ml-100k") from a directory holding u.data, u.item and u.user:
// the ratings as tensors and a Dataset (tfds's movielens/100k-ratings with integer ids),
// the movies and users as column structs (titles and zip codes are text, which tensors
// cannot hold). Stateless functions; thread-safe.
//
//   auto ratings = movielens_100k::ratings("../shared/data/ml-100k");  // 100,000 elements
//   auto movies = movielens_100k::load_movies("../shared/data/ml-100k");  // 1,682 movies
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/core/tree.h"
#include "chorus/data/dataset.h"

namespace chorus::datasets::movielens_100k {

// u.data (tab-separated user id, item id, rating, timestamp) as a dict of columns:
//   {"movie_id": (N,) int32, "timestamp": (N,) int64, "user_id": (N,) int32,
//    "user_rating": (N,) float32 (1 to 5, as tfds's user_rating)}
// in file order; N = 100,000 for the published file. Throws IOError naming the file and
// line for a malformed line ("u.data:5121: expected 4 tab-separated fields, found 3"),
// a field that is not an integer, or a rating outside 1-5. Blank lines are skipped.
Tree load_ratings(const std::string& dir);

// Dataset::from_tensor_slices(load_ratings(dir)): one dict of scalars per rating, with
// tfds's keys (user_id, movie_id, user_rating, timestamp).
data::Dataset ratings(const std::string& dir);

inline constexpr int kNumGenres = 19;
// The genre names of u.genre ("unknown", "Action", ... "Western"), in flag order.
const std::array<std::string_view, kNumGenres>& genre_names();

// u.item ('|'-separated, latin-1) as columns, one row per movie in file order.
struct Movies {
  Tensor movie_id;                         // (N,) int32
  Tensor genres;                           // (N, 19) int32 0/1 flags, in genre_names() order
  std::vector<std::string> titles;         // UTF-8: "Misérables, Les (1995)"
  std::vector<std::string> release_dates;  // "01-Jan-1995"; empty where unknown
  std::vector<std::string> imdb_urls;      // empty where unknown
  size_t size() const { return titles.size(); }
};

// Reads `dir`/u.item (1,682 movies), decoding latin-1 to UTF-8. Throws IOError naming
// the file and line for a line without 24 fields, a bad id or a genre flag not 0 or 1.
Movies load_movies(const std::string& dir);

// u.user ('|'-separated) as columns, one row per user in file order.
struct Users {
  Tensor user_id;                             // (N,) int32
  Tensor age;                                 // (N,) int32
  Tensor is_male;                             // (N,) bool: gender "M" (tfds's user_gender)
  Tensor occupation;                          // (N,) int32: index into occupation_names
  std::vector<std::string> occupation_names;  // the distinct occupations, sorted (= u.occupation)
  std::vector<std::string> zip_codes;         // text: some are Canadian ("T8H1N")
  size_t size() const { return zip_codes.size(); }
};

// Reads `dir`/u.user (943 users). Throws IOError naming the file and line for a line
// without 5 fields, a bad id or age, or a gender other than M or F.
Users load_users(const std::string& dir);

}  // namespace chorus::datasets::movielens_100k
