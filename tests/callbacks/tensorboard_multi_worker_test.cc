// Only rank 0 of a multi-worker job writes TensorBoard files: this binary, re-run as two
// worker processes (CHORUS_TENSORBOARD_WORKER names the log_dir), fits with the callback
// into one log_dir.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>

#include <gtest/gtest.h>

#include "chorus/callbacks/tensorboard.h"
#include "chorus/chorus.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/event_records.h"
#include "tests/testing/free_port.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/worker_process.h"

namespace chorus::callbacks {
namespace {

namespace fs = std::filesystem;

// The worker side: a 2-epoch fit, 2 batches an epoch, logging every batch.
class TensorBoardWorker : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* log_dir = std::getenv("CHORUS_TENSORBOARD_WORKER");
    if (log_dir == nullptr) return;
    int code = 0;
    try {
      distribute::MultiWorkerMirroredStrategy strategy;
      layers::set_random_seed(3);
      Tensor x = layers::Input({3});
      models::Model model(x, layers::Dense(1)(x));
      {
        auto scope = strategy.scope();
        model.compile({.optimizer = optimizers::SGD(0.05), .loss = "mse"});
      }
      const testing::LinearData data = testing::linear_data(8, 11);
      model.fit(data.x, data.y,
                {.epochs = 2, .batch_size = 4, .verbose = 0, .callbacks = {TensorBoard(log_dir, {.update_freq = 1})},
                 .shuffle = false});
    } catch (const std::exception& e) {
      std::cerr << "rank " << std::getenv("RANK") << ": " << e.what() << "\n";
      code = 1;
    }
    std::fflush(nullptr);
    std::_Exit(code);
  }
};
[[maybe_unused]] ::testing::Environment* const tensorboard_worker =
    ::testing::AddGlobalTestEnvironment(new TensorBoardWorker);

class TensorBoardMultiWorkerTest : public testing::TempDirTest {
 protected:
  pid_t spawn(int rank, int port) const {
    return testing::spawn_self({"--gtest_filter=TensorBoardMultiWorkerTest.*"},
                               testing::worker_environment(rank, 2, port, "tensorboard",
                                                           {"CHORUS_TENSORBOARD_WORKER=" + (dir_ / "logs").string(),
                                                            "CHORUS_CPU_DEVICES=1", "OMP_NUM_THREADS=1",
                                                            "CHORUS_COLLECTIVE_TIMEOUT=20"}),
                               /*quiet=*/true);
  }
  static int wait_exit(pid_t pid) { return testing::wait_exit(pid); }
};

TEST_F(TensorBoardMultiWorkerTest, OnlyRankZeroWrites) {
  const int port = testing::free_port();
  const pid_t rank0 = spawn(0, port), rank1 = spawn(1, port);
  ASSERT_EQ(wait_exit(rank0), 0);
  ASSERT_EQ(wait_exit(rank1), 0);
  const fs::path file = testing::the_events_file(dir_ / "logs" / "train");  // exactly one
  EXPECT_NE(file.filename().string().find("." + std::to_string(rank0) + ".0.v2"), std::string::npos) << file;
  // Per epoch: batch_loss after each of its 2 batches, then epoch_loss and epoch_learning_rate.
  std::vector<std::string> tags;
  for (const testing::Scalar& s : testing::scalars(testing::read_events(file))) tags.push_back(s.tag);
  EXPECT_EQ(tags, (std::vector<std::string>{"batch_loss", "batch_loss", "epoch_loss", "epoch_learning_rate", "batch_loss",
                                            "batch_loss", "epoch_loss", "epoch_learning_rate"}));
  EXPECT_FALSE(fs::exists(dir_ / "logs" / "validation"));
}

}  // namespace
}  // namespace chorus::callbacks
