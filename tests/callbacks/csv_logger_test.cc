#include "chorus/callbacks/csv_logger.h"

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "chorus/io/atomic_file.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

using models::Logs;
using namespace testing::test_names;

class CSVLoggerTest : public testing::TempDirTest {
 protected:
  std::string path() const { return (dir_ / "log.csv").string(); }
  std::string contents() const { return io::read_file(path()); }
};

// Keras sorts the names and, when the first epoch has no val_ names, adds a val_ column
// for each ("NA" until validation runs); values are Python reprs; lines end in "\r\n".
TEST_F(CSVLoggerTest, WritesSortedColumnsWithValPlaceholders) {
  CSVLogger logger(path());
  logger.on_train_begin({});
  logger.on_epoch_end(0, {{"loss", 0.5}, {"accuracy", 0.25}});
  EXPECT_EQ(contents(), "epoch,accuracy,loss,val_accuracy,val_loss\r\n0,0.25,0.5,NA,NA\r\n");  // flushed per row
  logger.on_epoch_end(1, {{"loss", 0.1}, {"accuracy", 1.0}, {"val_loss", std::nan("")}, {"val_accuracy", 0.75}});
  logger.on_train_end({});
  EXPECT_EQ(contents(),
            "epoch,accuracy,loss,val_accuracy,val_loss\r\n"
            "0,0.25,0.5,NA,NA\r\n"
            "1,1.0,0.1,0.75,nan\r\n");
}

TEST_F(CSVLoggerTest, ValidationInTheFirstEpochAddsNoColumns) {
  CSVLogger logger(path());
  logger.on_train_begin({});
  logger.on_epoch_end(0, {{"loss", 0.5}, {"val_loss", 0.75}});
  logger.on_epoch_end(1, {{"loss", 0.25}});
  logger.on_train_end({});
  EXPECT_EQ(contents(), "epoch,loss,val_loss\r\n0,0.5,0.75\r\n1,0.25,NA\r\n");
}

TEST_F(CSVLoggerTest, TruncatesUnlessAppending) {
  write("log.csv", "old contents\r\n");
  CSVLogger logger(path());
  logger.on_train_begin({});
  logger.on_epoch_end(0, {{"loss", 2.0}, {"val_loss", 3.0}});
  logger.on_train_end({});
  EXPECT_EQ(contents(), "epoch,loss,val_loss\r\n0,2.0,3.0\r\n");

  // A second fit appends rows without a second header.
  CSVLogger appender(path(), {.append = true});
  appender.on_train_begin({});
  appender.on_epoch_end(1, {{"loss", 1.0}, {"val_loss", 1.5}});
  appender.on_train_end({});
  EXPECT_EQ(contents(), "epoch,loss,val_loss\r\n0,2.0,3.0\r\n1,1.0,1.5\r\n");
}

TEST_F(CSVLoggerTest, AppendingToAnEmptyOrMissingFileWritesTheHeader) {
  write("log.csv", "");
  CSVLogger logger(path(), {.append = true});
  logger.on_train_begin({});
  logger.on_epoch_end(0, {{"loss", 2.0}, {"val_loss", 3.0}});
  logger.on_train_end({});
  EXPECT_EQ(contents(), "epoch,loss,val_loss\r\n0,2.0,3.0\r\n");

  CSVLogger fresh((dir_ / "new.csv").string(), {.append = true});
  fresh.on_train_begin({});
  fresh.on_epoch_end(0, {{"loss", 2.0}, {"val_loss", 3.0}});
  fresh.on_train_end({});
  EXPECT_EQ(io::read_file(dir_ / "new.csv"), "epoch,loss,val_loss\r\n0,2.0,3.0\r\n");
}

// Python's csv quotes a cell holding the separator or a quote, doubling quotes.
TEST_F(CSVLoggerTest, SeparatorAndQuoting) {
  CSVLogger logger(path(), {.separator = ';'});
  logger.on_train_begin({});
  logger.on_epoch_end(0, {{"a;b", 1.0}, {"say \"hi\"", 2.0}, {"val_x", 3.0}});
  logger.on_train_end({});
  EXPECT_EQ(contents(), "epoch;\"a;b\";\"say \"\"hi\"\"\";val_x\r\n0;1.0;2.0;3.0\r\n");
}

TEST_F(CSVLoggerTest, AnUnwritablePathIsAnError) {
  CSVLogger logger((dir_ / "missing" / "log.csv").string());
  EXPECT_THAT([&] { logger.on_train_begin({}); },
              ThrowsMessage<IOError>(HasSubstr("CSVLogger: cannot open " + (dir_ / "missing" / "log.csv").string() +
                                               " for writing: No such file or directory")));
}

}  // namespace
}  // namespace chorus::callbacks
