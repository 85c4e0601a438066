#include "chorus/data/movielens.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/testing/shared_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::datasets::movielens_100k {
namespace {

using namespace testing::test_names;

class MovielensTest : public testing::TempDirTest {};

std::string item_line(int id, const std::string& title, int genre) {
  std::string line = std::to_string(id) + "|" + title + "|01-Jan-1995||http://x/" + std::to_string(id);
  for (int g = 0; g < kNumGenres; ++g) line += g == genre ? "|1" : "|0";
  return line;
}

TEST_F(MovielensTest, RatingsFromASmallFile) {
  // CRLF endings, a blank line, and no ending on the last line.
  write("u.data", "196\t242\t3\t881250949\r\n186\t302\t3\t891717742\n\n22\t377\t1\t878887116\r\n7\t5\t5\t9999999999");
  const Tree columns = load_ratings(dir());
  EXPECT_EQ(columns["user_id"].tensor().to_vector<int>(), (std::vector<int>{196, 186, 22, 7}));
  EXPECT_EQ(columns["movie_id"].tensor().to_vector<int>(), (std::vector<int>{242, 302, 377, 5}));
  EXPECT_EQ(columns["user_rating"].tensor().to_vector<float>(), (std::vector<float>{3, 3, 1, 5}));
  EXPECT_EQ(columns["timestamp"].tensor().to_vector<int64_t>(),
            (std::vector<int64_t>{881250949, 891717742, 878887116, 9999999999}));
  EXPECT_EQ(columns["user_id"].tensor().dtype(), kInt32);
  EXPECT_EQ(columns["user_rating"].tensor().dtype(), kFloat32);
  EXPECT_EQ(columns["timestamp"].tensor().dtype(), kInt64);
}

TEST_F(MovielensTest, RatingsDatasetYieldsOneDictPerRating) {
  write("u.data", "196\t242\t3\t881250949\n186\t302\t4\t891717742\n");
  const data::Dataset dataset = ratings(dir());
  EXPECT_EQ(dataset.cardinality(), 2);
  auto it = dataset.iterator();
  it.next();
  const Tree second = *it.next();
  EXPECT_EQ(second.to_string(),
            "{\"movie_id\": () int32, \"timestamp\": () int64, \"user_id\": () int32, \"user_rating\": () float32}");
  EXPECT_EQ(second["user_id"].tensor().item<int>(), 186);
  EXPECT_EQ(second["user_rating"].tensor().item<float>(), 4);
  EXPECT_FALSE(it.next().has_value());
}

TEST_F(MovielensTest, LongIdsTakeTheSlowPathButParse) {
  write("u.data", "2147483647\t0001\t4\t0\n");
  const Tree columns = load_ratings(dir());
  EXPECT_EQ(columns["user_id"].tensor().to_vector<int>(), (std::vector<int>{2147483647}));
  EXPECT_EQ(columns["movie_id"].tensor().to_vector<int>(), (std::vector<int>{1}));
}

// Found by fuzz/movielens_fuzzer: the fast path multiplied every digit of a long field
// into an int64 before refusing it, a signed overflow (scripts/sanitize reports it).
TEST_F(MovielensTest, AFieldOfManyDigitsIsAnErrorWithoutOverflow) {
  const std::string digits(60, '9');
  write("u.data", "1\t10\t4\t" + digits + "\n");
  EXPECT_THAT([&] { load_ratings(dir()); },
              ThrowsMessage<IOError>(HasSubstr("u.data:1: timestamp: expected an integer from 0 to 9223372036854775807, found '" +
                                               digits + "'")));
  write("u.data", digits + "\t10\t4\t1\n");
  EXPECT_THAT([&] { load_ratings(dir()); },
              ThrowsMessage<IOError>(HasSubstr("u.data:1: user_id: expected an integer from 0 to 2147483647, found '" + digits + "'")));
}

TEST_F(MovielensTest, MalformedRatingLinesNameFileAndLine) {
  std::string good;
  for (int i = 0; i < 5120; ++i) good += "1\t2\t3\t4\n";
  write("u.data", good + "1\t2\t3\n");
  EXPECT_THAT([&] { load_ratings(dir()); },
              ThrowsMessage<IOError>(HasSubstr("u.data:5121: expected 4 tab-separated fields, found 3")));
  write("u.data", "1\t2\t3\t4\n1\tx1\t3\t4\n");
  EXPECT_THAT([&] { load_ratings(dir()); },
              ThrowsMessage<IOError>(HasSubstr("u.data:2: movie_id: expected an integer from 0 to 2147483647, found 'x1'")));
  write("u.data", "1\t2\t7\t4\n");
  EXPECT_THAT([&] { load_ratings(dir()); },
              ThrowsMessage<IOError>(HasSubstr("u.data:1: user_rating: expected a rating from 1 to 5, found '7'")));
  write("u.data", "1\t2\t3\t4 \n");
  EXPECT_THAT([&] { load_ratings(dir()); },
              ThrowsMessage<IOError>(HasSubstr("u.data:1: timestamp: expected an integer from 0 to")));
  write("u.data", "2147483648\t2\t3\t4\n");
  EXPECT_THAT([&] { load_ratings(dir()); }, ThrowsMessage<IOError>(HasSubstr("u.data:1: user_id: expected")));
  EXPECT_THAT([&] { load_ratings((dir_ / "nowhere").string()); },
              ThrowsMessage<IOError>(HasSubstr("nowhere/u.data: cannot open: No such file or directory")));
}

TEST_F(MovielensTest, MoviesDecodeLatin1AndGenres) {
  std::string unknown = "267|unknown||||1";  // movie 267 has no date nor URL
  for (int g = 1; g < kNumGenres; ++g) unknown += "|0";
  write("u.item", item_line(1, "Toy Story (1995)", 3) + "\n" + item_line(2, "Mis\xe9rables, Les (1995)", 18) +
                      "\r\n" + unknown);
  const Movies movies = load_movies(dir());
  ASSERT_EQ(movies.size(), 3u);
  EXPECT_EQ(movies.movie_id.to_vector<int>(), (std::vector<int>{1, 2, 267}));
  EXPECT_EQ(movies.titles[1], "Mis\xc3\xa9rables, Les (1995)");
  EXPECT_EQ(movies.titles[2], "unknown");
  EXPECT_EQ(movies.release_dates[0], "01-Jan-1995");
  EXPECT_EQ(movies.release_dates[2], "");
  EXPECT_EQ(movies.genres.shape(), Shape({3, kNumGenres}));
  const auto flags = movies.genres.to_vector<int>();
  for (int g = 0; g < kNumGenres; ++g) {
    EXPECT_EQ(flags[static_cast<size_t>(g)], g == 3 ? 1 : 0);
    EXPECT_EQ(flags[static_cast<size_t>(kNumGenres + g)], g == 18 ? 1 : 0);
    EXPECT_EQ(flags[static_cast<size_t>(2 * kNumGenres + g)], g == 0 ? 1 : 0);
  }
  EXPECT_EQ(genre_names()[3], "Animation");
}

TEST_F(MovielensTest, MalformedMovieLines) {
  write("u.item", item_line(1, "A", 0) + "\n1|B|x\n");
  EXPECT_THAT([&] { load_movies(dir()); },
              ThrowsMessage<IOError>(HasSubstr("u.item:2: expected 24 '|'-separated fields, found 3")));
  std::string bad_flag = item_line(1, "A", 0);
  bad_flag.back() = '2';
  write("u.item", bad_flag);
  EXPECT_THAT([&] { load_movies(dir()); },
              ThrowsMessage<IOError>(HasSubstr("u.item:1: Western: expected an integer from 0 to 1, found '2'")));
}

TEST_F(MovielensTest, UsersFromASmallFile) {
  write("u.user", "1|24|M|technician|85711\n2|53|F|other|94043\r\n3|23|M|writer|T8H1N");
  const Users users = load_users(dir());
  ASSERT_EQ(users.size(), 3u);
  EXPECT_EQ(users.user_id.to_vector<int>(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(users.age.to_vector<int>(), (std::vector<int>{24, 53, 23}));
  EXPECT_EQ(users.is_male.to_vector<int>(), (std::vector<int>{1, 0, 1}));
  EXPECT_EQ(users.occupation_names, (std::vector<std::string>{"other", "technician", "writer"}));
  EXPECT_EQ(users.occupation.to_vector<int>(), (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(users.zip_codes[2], "T8H1N");
  write("u.user", "1|24|X|technician|85711\n");
  EXPECT_THAT([&] { load_users(dir()); }, ThrowsMessage<IOError>(HasSubstr("u.user:1: gender: expected M or F, found 'X'")));
  write("u.user", "1|old|M|technician|85711\n");
  EXPECT_THAT([&] { load_users(dir()); }, ThrowsMessage<IOError>(HasSubstr("u.user:1: age: expected an integer")));
}

class MovielensRealDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto found = testing::shared_data_dir("ml-100k");
    if (!found) GTEST_SKIP() << testing::shared_data_missing("ml-100k");
    dir_ = *found;
  }
  std::string dir_;
};

TEST_F(MovielensRealDataTest, RatingsMatchAPlainReadOfUData) {
  const Tree columns = load_ratings(dir_);
  const auto users = columns["user_id"].tensor().to_vector<int64_t>();
  const auto movies = columns["movie_id"].tensor().to_vector<int64_t>();
  const auto ratings = columns["user_rating"].tensor().to_vector<float>();
  const auto times = columns["timestamp"].tensor().to_vector<int64_t>();
  ASSERT_EQ(users.size(), 100000u);
  EXPECT_EQ(users[0], 196);
  EXPECT_EQ(movies[0], 242);
  EXPECT_EQ(ratings[0], 3);
  EXPECT_EQ(times[0], 881250949);
  std::ifstream in(std::filesystem::path(dir_) / "u.data");
  int64_t u, m, r, t;
  size_t i = 0;
  std::vector<int> per_rating(6);
  while (in >> u >> m >> r >> t) {
    ASSERT_LT(i, users.size());
    ASSERT_EQ(users[i], u) << "line " << i + 1;
    ASSERT_EQ(movies[i], m) << "line " << i + 1;
    ASSERT_EQ(ratings[i], static_cast<float>(r)) << "line " << i + 1;
    ASSERT_EQ(times[i], t) << "line " << i + 1;
    ++per_rating[static_cast<size_t>(r)];
    ++i;
  }
  EXPECT_EQ(i, 100000u);
  EXPECT_EQ(per_rating, (std::vector<int>{0, 6110, 11370, 27145, 34174, 21201}));
  EXPECT_EQ(std::set<int64_t>(users.begin(), users.end()).size(), 943u);
  EXPECT_EQ(std::set<int64_t>(movies.begin(), movies.end()).size(), 1682u);
}

TEST_F(MovielensRealDataTest, MoviesAndUsers) {
  const Movies movies = load_movies(dir_);
  ASSERT_EQ(movies.size(), 1682u);
  EXPECT_EQ(movies.titles[0], "Toy Story (1995)");
  EXPECT_EQ(movies.movie_id.to_vector<int>()[1681], 1682);
  EXPECT_EQ(movies.titles[542], "Mis\xc3\xa9rables, Les (1995)");
  EXPECT_EQ(movies.titles[1632], "\xc3\x81 k\xc3\xb6ldum klaka (Cold Fever) (1994)");
  int non_ascii_titles = 0;
  for (const std::string& title : movies.titles) {
    non_ascii_titles += std::any_of(title.begin(), title.end(), [](char c) { return c & 0x80; });
  }
  EXPECT_EQ(non_ascii_titles, 9);
  const auto toy_story = movies.genres.first_axis_slice(0, 1).to_vector<int>();
  EXPECT_EQ(toy_story, (std::vector<int>{0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));

  const Users users = load_users(dir_);
  ASSERT_EQ(users.size(), 943u);
  EXPECT_EQ(users.age.to_vector<int>()[0], 24);
  EXPECT_EQ(users.occupation_names.size(), 21u);
  EXPECT_EQ(users.occupation_names[users.occupation.to_vector<size_t>()[0]], "technician");
  std::ifstream occupations(std::filesystem::path(dir_) / "u.occupation");
  std::vector<std::string> listed;
  for (std::string line; std::getline(occupations, line);) listed.push_back(line);
  EXPECT_EQ(users.occupation_names, listed);
}

}  // namespace
}  // namespace chorus::datasets::movielens_100k
