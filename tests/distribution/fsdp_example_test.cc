// examples/fsdp.cc as a user runs it (`build/fsdp CHECKPOINT_DIR`): it exits 0, writes its
// checkpoint in shards, and prints numbers within the bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <regex>

#include "tests/testing/run_chorus.h"
#include "tests/testing/temp_dir.h"

namespace chorus::testing {
namespace {

class FsdpExampleTest : public TempDirTest {};

// The number printed after "`name`: ", or NaN (a failure) when there is none.
double printed(const std::string& output, const std::string& name) {
  std::smatch match;
  if (std::regex_search(output, match, std::regex(name + ": ([-+0-9.e]+)"))) return std::stod(match[1]);
  ADD_FAILURE() << "no " << name << " in:\n" << output;
  return std::nan("");
}

TEST_F(FsdpExampleTest, TrainsSavesInShardsAndReloadsOnOneDevice) {
  const ChorusRun run = run_built("fsdp", "'" + (dir_ / "checkpoint").string() + "'");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Plain DataParallel's weights differ from one device's as much (1.7e-5 after Adam's 24
  // steps): FSDP's equal them bit for bit (fully_sharded_test.cc).
  EXPECT_LE(printed(run.output, "max_relative_difference_vs_one_device"), 1e-4);
  EXPECT_EQ(printed(run.output, "reloaded_max_relative_difference"), 0.0);
  std::smatch bytes;
  ASSERT_TRUE(std::regex_search(run.output, bytes, std::regex("state_bytes_per_device: (\\d+) of (\\d+)")));
  EXPECT_LE(std::stod(bytes[1]), 0.3 * std::stod(bytes[2]));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "checkpoint" / "model.safetensors.index.json"));
  EXPECT_TRUE(std::filesystem::exists(dir_ / "checkpoint" / "model-00001-of-00001.safetensors"));
}

}  // namespace
}  // namespace chorus::testing
