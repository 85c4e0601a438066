// Where tests find the shared data sets, and what a test that cannot find one says: a
// user who cloned the repository alone must learn how to supply the data.
#include "tests/testing/shared_data.h"
#include "tests/testing/test_names.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace chorus::testing {
namespace {

using namespace testing::test_names;

// Points CHORUS_SHARED_DATA and CHORUS_DATA_HOME at empty folders of a fresh temporary
// directory for the test's duration, then gives back what the caller had set: the tests
// that run later in the same binary still find the real data.
class SharedDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"CHORUS_SHARED_DATA", "CHORUS_DATA_HOME"}) {
      if (const char* value = std::getenv(name)) saved_env_.emplace_back(name, value);
    }
    root_ = std::filesystem::temp_directory_path() / ("chorus_shared_data_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(root_ / "shared");
    std::filesystem::create_directories(root_ / "home");
    ::setenv("CHORUS_SHARED_DATA", (root_ / "shared").c_str(), 1);
    ::setenv("CHORUS_DATA_HOME", (root_ / "home").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("CHORUS_SHARED_DATA");
    ::unsetenv("CHORUS_DATA_HOME");
    for (const auto& [name, value] : saved_env_) ::setenv(name.c_str(), value.c_str(), 1);
    std::filesystem::remove_all(root_);
  }
  std::filesystem::path root_;
  std::vector<std::pair<std::string, std::string>> saved_env_;
};

TEST_F(SharedDataTest, AFolderUnderTheRootIsFound) {
  std::filesystem::create_directories(root_ / "shared" / "mnist");
  EXPECT_EQ(shared_data_dir("mnist"), (root_ / "shared" / "mnist").string());
}

TEST_F(SharedDataTest, MissingDataSetsAreNotFoundAndTheMessageSaysHowToSupplyThem) {
  EXPECT_EQ(shared_data_dir("mnist"), std::nullopt);
  EXPECT_EQ(shared_data_dir("ml-100k"), std::nullopt);
  EXPECT_EQ(shared_data_dir("wikitext-2"), std::nullopt);
  EXPECT_THAT(shared_data_missing("ml-100k"),
              AllOf(HasSubstr("'ml-100k' not found at " + (root_ / "shared" / "ml-100k").string()),
                    HasSubstr("set CHORUS_SHARED_DATA to the folder holding it"),
                    HasSubstr("run `build/chorus data fetch movielens-100k`")));
  EXPECT_THAT(shared_data_missing("mnist"), HasSubstr("run `build/chorus data fetch mnist`"));
  EXPECT_THAT(shared_data_missing("wikitext-2"), HasSubstr("run `build/chorus data fetch wikitext-2`"));
  // No download is registered for the BERT vocabulary: the message must not promise one.
  EXPECT_EQ(shared_data_dir("bert"), std::nullopt);
  EXPECT_THAT(shared_data_missing("bert"), AllOf(HasSubstr("CHORUS_SHARED_DATA"), Not(HasSubstr("data fetch"))));
}

}  // namespace
}  // namespace chorus::testing
