// MovieLens 100K file layouts (README of ml-100k):
//   u.data  user_id \t item_id \t rating \t timestamp           100,000 lines
//   u.item  id|title|release date|video release date|IMDb URL|19 genre flags
//           (latin-1; 1,682 lines)
//   u.user  id|age|gender|occupation|zip code                   943 lines
// u.data is parsed by a hand-written loop over the whole file (one pass, no allocation
// per line); a line that does not fit the fast path is re-read by a slow path that
// names what is wrong with it.
#include "chorus/data/movielens.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>

#include "chorus/core/creation.h"
#include "chorus/core/error.h"
#include "chorus/data/line_reader.h"

namespace chorus::datasets::movielens_100k {
namespace {

constexpr std::array<std::string_view, 4> kRatingFields = {"user_id", "movie_id", "user_rating", "timestamp"};

std::string file_in(const std::string& dir, const char* name) {
  return (std::filesystem::path(dir) / name).string();
}

std::vector<std::string_view> split(std::string_view line, char separator) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t end = line.find(separator, start);
    fields.push_back(line.substr(start, end - start));
    if (end == std::string_view::npos) return fields;
    start = end + 1;
  }
}

// A non-negative integer field at most `max`; IOError naming file, line and field otherwise.
int64_t parse_field(std::string_view field, int64_t max, const std::string& path, int64_t line,
                    std::string_view name) {
  int64_t value = -1;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || field[0] == '-' || ec != std::errc() || end != field.data() + field.size() || value > max) {
    throw_error<IOError>("{}:{}: {}: expected an integer from 0 to {}, found '{}'", path, line, name, max, field);
  }
  return value;
}

// The slow path for a u.data line (text without its ending) that the fast path
// rejected: fills `values`, or throws IOError saying what is wrong with the line.
void parse_rating_line_slow(std::string_view text, const std::string& path, int64_t line, int64_t (&values)[4]) {
  const auto fields = split(text, '\t');
  if (fields.size() != 4) {
    throw_error<IOError>("{}:{}: expected 4 tab-separated fields, found {}", path, line, fields.size());
  }
  constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
  for (size_t i = 0; i < 4; ++i) {
    values[i] = parse_field(fields[i], i == 3 ? std::numeric_limits<int64_t>::max() : kInt32Max, path, line,
                            kRatingFields[i]);
  }
  if (values[2] < 1 || values[2] > 5) {
    throw_error<IOError>("{}:{}: user_rating: expected a rating from 1 to 5, found '{}'", path, line, fields[2]);
  }
}

// Reads decimal digits at p (at most max_digits, at least one) into value and returns
// the position after them, or nullptr if the field does not fit.
inline const char* read_digits(const char* p, const char* end, int max_digits, int64_t& value) {
  const char* start = p;
  value = 0;
  // Digits past max_digits are skipped, not added: the field is refused anyway, and
  // adding them could overflow value.
  for (; p < end && static_cast<unsigned>(*p - '0') < 10u; ++p) {
    if (p - start < max_digits) value = value * 10 + (*p - '0');
  }
  return (p == start || p - start > max_digits) ? nullptr : p;
}

// The fast path for one u.data line starting at p: fills `values` and returns the
// position of the line's end ('\n', '\r' or end), or nullptr if the line does not fit.
inline const char* parse_rating_line(const char* p, const char* end, int64_t (&values)[4]) {
  constexpr int kMaxDigits[4] = {9, 9, 1, 18};  // 9 digits always fit int32
  for (int i = 0; i < 4; ++i) {
    p = read_digits(p, end, kMaxDigits[i], values[i]);
    if (p == nullptr) return nullptr;
    if (i < 3) {
      if (p == end || *p != '\t') return nullptr;
      ++p;
    }
  }
  if (p < end && *p == '\r') ++p;
  if (p < end && *p != '\n') return nullptr;
  return (values[2] < 1 || values[2] > 5) ? nullptr : p;
}

std::string latin1_to_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 8);
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x80) {
      out.push_back(c);
    } else {
      out.push_back(static_cast<char>(0xC0 | (byte >> 6)));
      out.push_back(static_cast<char>(0x80 | (byte & 0x3F)));
    }
  }
  return out;
}

// Calls fn(fields, line_number) for every non-blank line of the '|'-separated file,
// after checking it has `expected_fields` fields.
template <class Fn>
void for_each_record(const std::string& path, size_t expected_fields, Fn&& fn) {
  const std::string text = data::read_file(path);
  size_t start = 0;
  for (int64_t line = 1; start < text.size(); ++line) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view record = data::strip_cr(std::string_view(text).substr(start, end - start));
    start = end + 1;
    if (record.empty()) continue;
    const auto fields = split(record, '|');
    if (fields.size() != expected_fields) {
      throw_error<IOError>("{}:{}: expected {} '|'-separated fields, found {}", path, line, expected_fields,
                           fields.size());
    }
    fn(fields, line);
  }
}

template <class T>
Tensor column(const std::vector<T>& values, Shape shape) {
  return from_values(values, shape);
}

}  // namespace

Tree load_ratings(const std::string& dir) {
  const std::string path = file_in(dir, "u.data");
  const std::string text = data::read_file(path);
  const auto lines = static_cast<int64_t>(std::count(text.begin(), text.end(), '\n') + 1);
  Tensor user = Tensor::empty({lines}, kInt32), movie = Tensor::empty({lines}, kInt32);
  Tensor rating = Tensor::empty({lines}, kFloat32), time = Tensor::empty({lines}, kInt64);
  int32_t* user_out = user.data<int32_t>();
  int32_t* movie_out = movie.data<int32_t>();
  float* rating_out = rating.data<float>();
  int64_t* time_out = time.data<int64_t>();
  const char* p = text.data();
  const char* const end = p + text.size();
  int64_t count = 0;
  for (int64_t line = 1; p < end; ++line) {
    if (*p == '\n' || (*p == '\r' && (p + 1 == end || p[1] == '\n'))) {  // blank line
      p += (*p == '\r') ? 2 : 1;
      continue;
    }
    int64_t values[4];
    const char* line_end = parse_rating_line(p, end, values);
    if (line_end == nullptr) {
      const char* eol = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
      line_end = eol != nullptr ? eol : end;
      parse_rating_line_slow(data::strip_cr(std::string_view(p, line_end)), path, line, values);
    }
    user_out[count] = static_cast<int32_t>(values[0]);
    movie_out[count] = static_cast<int32_t>(values[1]);
    rating_out[count] = static_cast<float>(values[2]);
    time_out[count] = values[3];
    ++count;
    p = line_end == end ? end : line_end + 1;
  }
  return Tree{{"movie_id", movie.first_axis_slice(0, count)},
              {"timestamp", time.first_axis_slice(0, count)},
              {"user_id", user.first_axis_slice(0, count)},
              {"user_rating", rating.first_axis_slice(0, count)}};
}

data::Dataset ratings(const std::string& dir) { return data::Dataset::from_tensor_slices(load_ratings(dir)); }

const std::array<std::string_view, kNumGenres>& genre_names() {
  static constexpr std::array<std::string_view, kNumGenres> kNames = {
      "unknown", "Action",  "Adventure", "Animation", "Children's", "Comedy",   "Crime",
      "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror",     "Musical",  "Mystery",
      "Romance", "Sci-Fi",  "Thriller",  "War",       "Western"};
  return kNames;
}

Movies load_movies(const std::string& dir) {
  const std::string path = file_in(dir, "u.item");
  constexpr size_t kFields = 5 + kNumGenres;
  Movies movies;
  std::vector<int32_t> ids, genres;
  for_each_record(path, kFields, [&](const std::vector<std::string_view>& fields, int64_t line) {
    ids.push_back(static_cast<int32_t>(parse_field(fields[0], std::numeric_limits<int32_t>::max(), path, line,
                                                   "movie_id")));
    movies.titles.push_back(latin1_to_utf8(fields[1]));
    movies.release_dates.push_back(latin1_to_utf8(fields[2]));
    movies.imdb_urls.push_back(latin1_to_utf8(fields[4]));
    for (int g = 0; g < kNumGenres; ++g) {
      genres.push_back(static_cast<int32_t>(parse_field(fields[5 + g], 1, path, line, genre_names()[g])));
    }
  });
  const auto n = static_cast<int64_t>(ids.size());
  movies.movie_id = column(ids, {n});
  movies.genres = column(genres, {n, kNumGenres});
  return movies;
}

Users load_users(const std::string& dir) {
  const std::string path = file_in(dir, "u.user");
  Users users;
  std::vector<int32_t> ids, ages;
  std::vector<std::string> occupations;
  std::vector<uint8_t> male;
  for_each_record(path, 5, [&](const std::vector<std::string_view>& fields, int64_t line) {
    constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
    ids.push_back(static_cast<int32_t>(parse_field(fields[0], kInt32Max, path, line, "user_id")));
    ages.push_back(static_cast<int32_t>(parse_field(fields[1], kInt32Max, path, line, "age")));
    if (fields[2] != "M" && fields[2] != "F") {
      throw_error<IOError>("{}:{}: gender: expected M or F, found '{}'", path, line, fields[2]);
    }
    male.push_back(fields[2] == "M");
    occupations.push_back(latin1_to_utf8(fields[3]));
    users.zip_codes.push_back(latin1_to_utf8(fields[4]));
  });
  users.occupation_names = occupations;
  std::sort(users.occupation_names.begin(), users.occupation_names.end());
  users.occupation_names.erase(std::unique(users.occupation_names.begin(), users.occupation_names.end()),
                               users.occupation_names.end());
  std::vector<int32_t> occupation_index;
  for (const std::string& name : occupations) {
    const auto it = std::lower_bound(users.occupation_names.begin(), users.occupation_names.end(), name);
    occupation_index.push_back(static_cast<int32_t>(it - users.occupation_names.begin()));
  }
  const auto n = static_cast<int64_t>(ids.size());
  users.user_id = column(ids, {n});
  users.age = column(ages, {n});
  users.occupation = column(occupation_index, {n});
  users.is_male = Tensor::empty({n}, kBool);
  std::copy(male.begin(), male.end(), users.is_male.data<bool>());
  return users;
}

}  // namespace chorus::datasets::movielens_100k
