// fetch against a local HTTP server (tests/testing/http_server.h) serving archives the
// tests build with libarchive: the real registry entries are used, with the mirror and
// the expected digests pointed at the test's own files. Only 127.0.0.1 is contacted.
#include "chorus/data/download.h"

#include <archive.h>
#include <archive_entry.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chorus/core/error.h"
#include "chorus/data/dataset_registry.h"
#include "chorus/data/movielens.h"
#include "chorus/data/sha256.h"
#include "tests/testing/http_server.h"
#include "tests/testing/run_chorus.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/test_names.h"

namespace chorus::data {
namespace {

namespace fs = std::filesystem;
using namespace testing::test_names;
using testing::HttpServer;

struct ZipEntry {
  enum Kind { kFile, kDirectory, kSymlink };
  std::string name;
  std::string content;  // a file's bytes or a link's target
  Kind kind = kFile;
};

// A zip archive in memory, written with libarchive exactly as given (unsafe names too).
std::string make_zip(const std::vector<ZipEntry>& entries) {
  size_t total = 0;
  for (const ZipEntry& e : entries) total += e.content.size() + e.name.size();
  std::string out(total * 2 + (1 << 16), '\0');
  size_t used = 0;
  archive* a = archive_write_new();
  archive_write_set_format_zip(a);
  archive_write_open_memory(a, out.data(), out.size(), &used);
  for (const ZipEntry& e : entries) {
    archive_entry* entry = archive_entry_new();
    archive_entry_set_pathname(entry, e.name.c_str());
    if (e.kind == ZipEntry::kDirectory) {
      archive_entry_set_filetype(entry, AE_IFDIR);
      archive_entry_set_perm(entry, 0755);
    } else if (e.kind == ZipEntry::kSymlink) {
      archive_entry_set_filetype(entry, AE_IFLNK);
      archive_entry_set_perm(entry, 0777);
      archive_entry_set_symlink(entry, e.content.c_str());
    } else {
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_perm(entry, 0644);
      archive_entry_set_size(entry, static_cast<la_int64_t>(e.content.size()));
    }
    EXPECT_EQ(archive_write_header(a, entry), ARCHIVE_OK) << archive_error_string(a);
    if (e.kind == ZipEntry::kFile) archive_write_data(a, e.content.data(), e.content.size());
    archive_entry_free(entry);
  }
  archive_write_close(a);
  archive_write_free(a);
  out.resize(used);
  return out;
}

const std::string kRatings = "196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n";
const std::string kItems = "1|Toy Story (1995)|01-Jan-1995||http://us.imdb.com/M/title-exact?Toy%20Story%20(1995)|0|0\n";

std::string movielens_zip() {
  return make_zip({{"ml-100k/", "", ZipEntry::kDirectory},
                   {"ml-100k/u.data", kRatings},
                   {"ml-100k/u.item", kItems}});
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> entries_of(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  return names;
}

class DownloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    home_ = fs::temp_directory_path() / fmt::format("chorus_download_{}_{}", ::getpid(), info->name());
    fs::remove_all(home_);
    fs::create_directories(home_);
    options_.dir = home_.string();
    options_.mirror = server_.url("/mirror/");
    options_.connect_timeout_s = 5;
  }
  void TearDown() override { fs::remove_all(home_); }

  // Serves `zip` as the MovieLens archive (cut after `cut_after` bytes unless -1, then
  // stalled if `stall`) and expects its digest.
  void serve_movielens(const std::string& zip, int64_t cut_after = -1, bool stall = false) {
    auto response = HttpServer::Response::ok(zip);
    response.cut_after = cut_after;
    response.stall = stall;
    server_.serve("/mirror/ml-100k.zip", response);
    options_.sha256_overrides["ml-100k.zip"] = sha256_hex(zip);
  }

  // Nothing in the cache looks like a dataset or a partial one: only the lock file.
  void expect_nothing_complete() {
    EXPECT_THAT(entries_of(home_), UnorderedElementsAre(".movielens-100k.lock"));
    EXPECT_EQ(find_fetched("movielens-100k", options_), std::nullopt);
  }

  HttpServer server_;
  fs::path home_;
  FetchOptions options_;
};

TEST_F(DownloadTest, GoodArchiveIsExtractedVerifiedAndMarked) {
  const std::string zip = movielens_zip();
  serve_movielens(zip);
  const std::string dir = fetch("movielens-100k", options_);
  EXPECT_EQ(dir, (home_ / "movielens-100k" / "ml-100k").string());
  EXPECT_EQ(read_file(fs::path(dir) / "u.data"), kRatings);
  EXPECT_EQ(read_file(fs::path(dir) / "u.item"), kItems);
  EXPECT_FALSE(fs::exists(home_ / "movielens-100k" / "ml-100k.zip"));  // extracted, then removed
  const auto marker = nlohmann::json::parse(read_file(home_ / "movielens-100k" / ".complete"));
  EXPECT_EQ(marker["dataset"], "movielens-100k");
  EXPECT_EQ(marker["sha256"]["ml-100k.zip"], sha256_hex(zip));
  EXPECT_THAT(entries_of(home_), UnorderedElementsAre(".movielens-100k.lock", "movielens-100k"));
  EXPECT_EQ(server_.request_count("/mirror/ml-100k.zip"), 1);
  EXPECT_EQ(find_fetched("movielens-100k", options_), dir);
}

TEST_F(DownloadTest, SecondFetchUsesTheCacheWithoutTheNetwork) {
  serve_movielens(movielens_zip());
  const std::string first = fetch("movielens-100k", options_);
  const std::string second = fetch("movielens-100k", options_);
  EXPECT_EQ(first, second);
  EXPECT_EQ(server_.request_count(), 1);
}

TEST_F(DownloadTest, WrongChecksumIsRejectedWithBothDigests) {
  const std::string zip = movielens_zip();
  serve_movielens(zip);
  const std::string expected = sha256_hex("some other archive");
  options_.sha256_overrides["ml-100k.zip"] = expected;
  EXPECT_THAT([&] { fetch("movielens-100k", options_); },
              ThrowsMessage<IOError>(AllOf(HasSubstr(server_.url("/mirror/ml-100k.zip")),
                                           HasSubstr("SHA-256 mismatch: expected " + expected + ", got " +
                                                     sha256_hex(zip)))));
  expect_nothing_complete();
}

TEST_F(DownloadTest, TruncatedResponseIsAnError) {
  const std::string zip = movielens_zip();
  serve_movielens(zip, static_cast<int64_t>(zip.size() / 2));
  EXPECT_THAT([&] { fetch("movielens-100k", options_); },
              ThrowsMessage<IOError>(AllOf(HasSubstr("fetch movielens-100k: " + server_.url("/mirror/ml-100k.zip")),
                                           HasSubstr("transfer closed"))));
  expect_nothing_complete();
}

TEST_F(DownloadTest, HttpErrorNamesTheUrlAndStatus) {
  options_.sha256_overrides["ml-100k.zip"] = sha256_hex("x");
  EXPECT_THAT([&] { fetch("movielens-100k", options_); },
              ThrowsMessage<IOError>(HasSubstr(server_.url("/mirror/ml-100k.zip") + ": HTTP status 404")));
  expect_nothing_complete();
}

TEST_F(DownloadTest, RedirectsAreFollowed) {
  const std::string zip = movielens_zip();
  server_.serve("/mirror/ml-100k.zip", HttpServer::Response::redirect("/moved/ml-100k.zip"));
  server_.serve("/moved/ml-100k.zip", HttpServer::Response::ok(zip));
  options_.sha256_overrides["ml-100k.zip"] = sha256_hex(zip);
  EXPECT_EQ(read_file(fs::path(fetch("movielens-100k", options_)) / "u.data"), kRatings);
  EXPECT_EQ(server_.request_count("/moved/ml-100k.zip"), 1);
}

TEST_F(DownloadTest, ArchiveEntriesOutsideTheDirectoryAreRejected) {
  serve_movielens(make_zip({{"ml-100k/u.data", kRatings}, {"../evil", "gotcha"}}));
  EXPECT_THAT([&] { fetch("movielens-100k", options_); },
              ThrowsMessage<IOError>(HasSubstr("ml-100k.zip: unsafe entry '../evil': expected a relative path")));
  EXPECT_FALSE(fs::exists(home_ / "evil"));
  expect_nothing_complete();

  const fs::path absolute = home_ / "absolute-evil";
  serve_movielens(make_zip({{absolute.string(), "gotcha"}}));
  EXPECT_THAT([&] { fetch("movielens-100k", options_); },
              ThrowsMessage<IOError>(HasSubstr("unsafe entry '" + absolute.string() + "'")));
  EXPECT_FALSE(fs::exists(absolute));
}

TEST_F(DownloadTest, LinksInArchivesAreRejected) {
  serve_movielens(make_zip({{"ml-100k/u.data", "/etc/passwd", ZipEntry::kSymlink}}));
  EXPECT_THAT([&] { fetch("movielens-100k", options_); },
              ThrowsMessage<IOError>(HasSubstr("entry 'ml-100k/u.data' is a link or special file")));
  expect_nothing_complete();
}

TEST_F(DownloadTest, ArchiveWithoutTheExpectedDirectoryIsRejected) {
  serve_movielens(make_zip({{"u.data", kRatings}}));
  EXPECT_THAT([&] { fetch("movielens-100k", options_); },
              ThrowsMessage<IOError>(HasSubstr("expected the download to contain a directory 'ml-100k'")));
  expect_nothing_complete();
}

TEST_F(DownloadTest, StalePartialDirectoriesAndIncompleteCopiesAreReplaced) {
  fs::create_directories(home_ / ".partial.movielens-100k.99999.0" / "ml-100k");
  fs::create_directories(home_ / "movielens-100k" / "ml-100k");  // no marker: a user edit or a crash
  std::ofstream(home_ / "movielens-100k" / "ml-100k" / "u.data") << "junk\n";
  serve_movielens(movielens_zip());
  EXPECT_EQ(find_fetched("movielens-100k", options_), std::nullopt);
  const std::string dir = fetch("movielens-100k", options_);
  EXPECT_EQ(read_file(fs::path(dir) / "u.data"), kRatings);
  EXPECT_THAT(entries_of(home_), UnorderedElementsAre(".movielens-100k.lock", "movielens-100k"));
}

TEST_F(DownloadTest, ChangedDigestsMakeTheCopyOutdated) {
  serve_movielens(movielens_zip());
  fetch("movielens-100k", options_);
  const std::string zip = make_zip({{"ml-100k/u.data", "1\t2\t3\t4\n"}});
  serve_movielens(zip);
  EXPECT_EQ(read_file(fs::path(fetch("movielens-100k", options_)) / "u.data"), "1\t2\t3\t4\n");
  EXPECT_FALSE(fs::exists(home_ / "movielens-100k" / "ml-100k" / "u.item"));  // nothing of the old copy
  EXPECT_EQ(server_.request_count(), 2);
}

TEST_F(DownloadTest, PlainFilesAreKeptAsServed) {
  const DatasetSpec& mnist = find_dataset("mnist");
  for (const RemoteFile& file : mnist.files) {
    const std::string body = "fake " + file.name;
    server_.serve("/mirror/" + file.name, HttpServer::Response::ok(body));
    options_.sha256_overrides[file.name] = sha256_hex(body);
  }
  const std::string dir = fetch("mnist", options_);
  EXPECT_EQ(dir, (home_ / "mnist").string());
  for (const RemoteFile& file : mnist.files) EXPECT_EQ(read_file(fs::path(dir) / file.name), "fake " + file.name);
  EXPECT_EQ(server_.request_count(), 4);
}

TEST_F(DownloadTest, FileMirrorAndEnvironmentVariables) {
  const fs::path mirror = home_ / "local-mirror";
  fs::create_directories(mirror);
  const std::string zip = movielens_zip();
  std::ofstream(mirror / "ml-100k.zip", std::ios::binary) << zip;
  options_.sha256_overrides["ml-100k.zip"] = sha256_hex(zip);
  FetchOptions from_env = options_;
  from_env.dir.clear();
  from_env.mirror.clear();
  ::setenv("CHORUS_DATA_HOME", (home_ / "cache").c_str(), 1);
  ::setenv("CHORUS_DATA_MIRROR", ("file://" + mirror.string()).c_str(), 1);
  const std::string dir = fetch("movielens-100k", from_env);
  ::unsetenv("CHORUS_DATA_HOME");
  ::unsetenv("CHORUS_DATA_MIRROR");
  EXPECT_EQ(dir, (home_ / "cache" / "movielens-100k" / "ml-100k").string());
  EXPECT_EQ(read_file(fs::path(dir) / "u.data"), kRatings);
  EXPECT_EQ(server_.request_count(), 0);
}

TEST_F(DownloadTest, StalledServerTimesOut) {
  const std::string zip = movielens_zip();
  serve_movielens(zip, /*cut_after=*/10, /*stall=*/true);
  options_.low_speed_bytes_per_s = 100;
  options_.low_speed_time_s = 1;
  EXPECT_THAT([&] { fetch("movielens-100k", options_); }, ThrowsMessage<IOError>(HasSubstr("too slow")));
  expect_nothing_complete();
}

TEST_F(DownloadTest, ProgressReportsBytesAndCanAbort) {
  const std::string zip = movielens_zip();
  serve_movielens(zip);
  int64_t last_done = 0, last_total = 0;
  options_.on_progress = [&](const FetchProgress& p) {
    EXPECT_EQ(p.dataset, "movielens-100k");
    EXPECT_EQ(p.file, "ml-100k.zip");
    last_done = p.bytes_done;
    last_total = p.bytes_total;
  };
  fetch("movielens-100k", options_);
  EXPECT_EQ(last_done, static_cast<int64_t>(zip.size()));
  EXPECT_EQ(last_total, static_cast<int64_t>(zip.size()));

  fs::remove_all(home_ / "movielens-100k");
  options_.on_progress = [](const FetchProgress&) { throw ValueError("cancelled by the user"); };
  EXPECT_THAT([&] { fetch("movielens-100k", options_); }, ThrowsMessage<ValueError>(HasSubstr("cancelled")));
  expect_nothing_complete();
}

TEST_F(DownloadTest, ConcurrentFetchesDownloadOnce) {
  serve_movielens(movielens_zip());
  std::vector<std::string> dirs(4);
  std::vector<std::thread> threads;
  for (auto& dir : dirs) threads.emplace_back([&] { dir = fetch("movielens-100k", options_); });
  for (auto& thread : threads) thread.join();
  for (const auto& dir : dirs) EXPECT_EQ(dir, dirs[0]);
  EXPECT_EQ(server_.request_count(), 1);
}

TEST_F(DownloadTest, BadNamesAndOverridesAreValueErrors) {
  EXPECT_THAT([&] { fetch("nope", options_); },
              ThrowsMessage<ValueError>(HasSubstr("unknown dataset 'nope': expected one of movielens-100k, mnist, "
                                                  "fashion-mnist, wikitext-2")));
  options_.sha256_overrides["u.data"] = sha256_hex("x");
  EXPECT_THAT([&] { fetch("movielens-100k", options_); },
              ThrowsMessage<ValueError>(HasSubstr("sha256_overrides names 'u.data', which is not a file")));
  options_.sha256_overrides = {{"ml-100k.zip", "abc"}};
  EXPECT_THAT([&] { fetch("movielens-100k", options_); },
              ThrowsMessage<ValueError>(HasSubstr("expected a SHA-256 of 64 hex digits for 'ml-100k.zip', got 'abc'")));
  EXPECT_EQ(server_.request_count(), 0);
}

// The published archive is not at hand, but its files are: fetch a zip of them and read
// it with the MovieLens reader, as `movielens_100k::ratings(fetch("movielens-100k"))`.
TEST_F(DownloadTest, FetchedDirectoryFeedsTheReaders) {
  const auto shared = testing::shared_data_dir("ml-100k");
  if (!shared) GTEST_SKIP() << testing::shared_data_missing("ml-100k");
  std::vector<ZipEntry> entries = {{"ml-100k/", "", ZipEntry::kDirectory}};
  for (const char* name : {"u.data", "u.item", "u.user", "u.genre", "u.occupation", "u.info", "README"}) {
    entries.push_back({std::string("ml-100k/") + name, read_file(fs::path(*shared) / name)});
  }
  serve_movielens(make_zip(entries));
  const Tree ratings = datasets::movielens_100k::load_ratings(fetch("movielens-100k", options_));
  EXPECT_EQ(ratings["user_rating"].tensor().dim(0), 100'000);
}

// ---- the registry ----

TEST(DatasetRegistryTest, EntriesAreWellFormed) {
  std::set<std::string> names;
  for (const DatasetSpec& spec : known_datasets()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_EQ(spec.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"), std::string::npos);
    ASSERT_FALSE(spec.base_urls.empty()) << spec.name;
    for (const std::string& base : spec.base_urls) EXPECT_TRUE(base.ends_with('/')) << base;
    for (const RemoteFile& file : spec.files) {
      EXPECT_EQ(file.sha256.size(), 64u) << file.name;
      EXPECT_EQ(file.sha256.find_first_not_of("0123456789abcdef"), std::string::npos) << file.name;
      EXPECT_GT(file.size_bytes, 0) << file.name;
    }
  }
  EXPECT_EQ(names, (std::set<std::string>{"movielens-100k", "mnist", "fashion-mnist", "wikitext-2"}));
}

// ../shared/data holds the original MNIST gz files: the registry's digests must be theirs.
TEST(DatasetRegistryTest, MnistDigestsMatchTheSharedCopies) {
  const auto shared = testing::shared_data_dir("mnist");
  if (!shared) GTEST_SKIP() << testing::shared_data_missing("mnist");
  for (const RemoteFile& file : find_dataset("mnist").files) {
    const fs::path path = fs::path(*shared) / file.name;
    EXPECT_EQ(sha256_file_hex(path.string()), file.sha256) << file.name;
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(path)), file.size_bytes) << file.name;
  }
}

// ---- the chorus CLI (built next to the test binary) ----

chorus::testing::ChorusRun run_chorus(const std::string& arguments, const fs::path& home) {
  return chorus::testing::run_chorus(arguments, "/dev/null", fmt::format("CHORUS_DATA_HOME='{}'", home.string()));
}

TEST_F(DownloadTest, CliListsDatasetsAndReportsErrors) {
  const auto list = run_chorus("data list", home_);
  if (list.exit_code == -1) GTEST_SKIP() << "the chorus CLI is not built: " << list.output;
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_THAT(list.output, AllOf(HasSubstr("movielens-100k"), HasSubstr("mnist"), HasSubstr("fashion-mnist"),
                                 HasSubstr("wikitext-2"), HasSubstr("not fetched")));

  const auto bad = run_chorus("data fetch nope", home_);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.output, HasSubstr("chorus: error: unknown dataset 'nope'"));
}

}  // namespace
}  // namespace chorus::data
