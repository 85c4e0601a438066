#include "chorus/models/history.h"

#include <gtest/gtest.h>

namespace chorus::models {
namespace {

TEST(HistoryTest, RecordsEachEpochsLogs) {
  History history;
  history.on_train_begin({});
  history.on_epoch_end(0, {{"loss", 0.5}, {"val_loss", 0.75}});
  history.on_epoch_end(1, {{"loss", 0.25}, {"val_loss", 0.5}});
  EXPECT_EQ(history.epoch, (std::vector<int>{0, 1}));
  EXPECT_EQ(history.history.at("loss"), (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(history.history.at("val_loss"), (std::vector<double>{0.75, 0.5}));
}

// As Keras 3: a new fit restarts the epoch list but keeps appending values.
TEST(HistoryTest, TrainBeginRestartsOnlyTheEpochList) {
  History history;
  history.on_train_begin({});
  history.on_epoch_end(0, {{"loss", 0.5}});
  history.on_train_begin({});
  history.on_epoch_end(3, {{"loss", 0.25}});
  EXPECT_EQ(history.epoch, (std::vector<int>{3}));
  EXPECT_EQ(history.history.at("loss"), (std::vector<double>{0.5, 0.25}));
}

}  // namespace
}  // namespace chorus::models
