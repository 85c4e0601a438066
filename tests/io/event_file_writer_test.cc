#include "chorus/io/event_file_writer.h"

#include <regex>

#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/event_records.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::io {
namespace {

using namespace testing::test_names;

class EventFileWriterTest : public testing::TempDirTest {};

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

TEST_F(EventFileWriterTest, NamesFilesAsTensorFlowDoes) {
  EventFileWriter first(dir_ / "a" / "train");  // creates the directories
  EventFileWriter second(dir_ / "a" / "train");
  const std::regex pattern(R"(events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)\.v2)");
  std::smatch m1, m2;
  const std::string name1 = first.path().filename().string(), name2 = second.path().filename().string();
  ASSERT_TRUE(std::regex_match(name1, m1, pattern)) << name1;
  ASSERT_TRUE(std::regex_match(name2, m2, pattern)) << name2;
  EXPECT_EQ(first.path().parent_path(), dir_ / "a" / "train");
  EXPECT_NEAR(std::stoll(m1[1]), static_cast<long long>(::time(nullptr)), 5);
  EXPECT_EQ(m1[2], this_host());
  EXPECT_EQ(std::stol(m1[3]), ::getpid());
  EXPECT_EQ(std::stoll(m2[4]), std::stoll(m1[4]) + 1);  // the process-wide file counter
}

// The first event is flushed at once, so a reader sees a valid file before any scalar.
TEST_F(EventFileWriterTest, FirstEventIsTheFileVersion) {
  EventFileWriter writer(dir_);
  const std::vector<tensorboard::Event> events = testing::read_events(writer.path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].source_metadata().writer(), "chorus");
  EXPECT_EQ(events[0].step(), 0);
  EXPECT_NEAR(events[0].wall_time(), static_cast<double>(::time(nullptr)), 5.0);
}

// tf.summary.scalar's encoding: plugin "scalars" with empty content, a DT_FLOAT scalar
// tensor (no dims) holding the value as 4 little-endian bytes of tensor_content.
TEST_F(EventFileWriterTest, ScalarsAreFloatTensorsOfTheScalarsPlugin) {
  EventFileWriter writer(dir_);
  writer.add_scalar("epoch_loss", 0.1, 3);
  writer.add_scalar("epoch_learning_rate", 1e-3, 4);
  writer.close();
  const std::vector<tensorboard::Event> events = testing::read_events(writer.path());
  ASSERT_EQ(events.size(), 3u);
  const tensorboard::Event& event = events[1];
  EXPECT_EQ(event.step(), 3);
  ASSERT_TRUE(event.has_summary());
  ASSERT_EQ(event.summary().value_size(), 1);
  const tensorboard::Summary::Value& value = event.summary().value(0);
  EXPECT_EQ(value.tag(), "epoch_loss");
  EXPECT_EQ(value.metadata().plugin_data().plugin_name(), "scalars");
  EXPECT_EQ(value.metadata().plugin_data().content(), "");
  EXPECT_EQ(value.value_case(), tensorboard::Summary::Value::kTensor);
  EXPECT_EQ(value.tensor().dtype(), tensorboard::DT_FLOAT);
  EXPECT_TRUE(value.tensor().has_tensor_shape());
  EXPECT_EQ(value.tensor().tensor_shape().dim_size(), 0);
  EXPECT_EQ(value.tensor().tensor_content(), std::string("\xcd\xcc\xcc\x3d", 4));  // 0.1f
  EXPECT_EQ(testing::scalars(events),
            (std::vector<testing::Scalar>{{"epoch_loss", 3, 0.1f}, {"epoch_learning_rate", 4, 1e-3f}}));
}

TEST_F(EventFileWriterTest, AnUncreatableDirectoryIsAnError) {
  write("file", "");
  EXPECT_THAT([&] { EventFileWriter writer(dir_ / "file" / "train"); },
              ThrowsMessage<IOError>(HasSubstr("EventFileWriter: cannot create log directory " +
                                               (dir_ / "file" / "train").string())));
}

}  // namespace
}  // namespace chorus::io
