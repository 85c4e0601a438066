#include "chorus/data/text_line_dataset.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "chorus/data/line_reader.h"
#include "tests/testing/shared_data.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::data {
namespace {

using namespace testing::test_names;

class TextLineDatasetTest : public testing::TempDirTest {};

std::vector<std::string> all_lines(const Dataset& dataset) {
  std::vector<std::string> out;
  for (auto it = dataset.iterator(); auto line = it.next();) out.push_back(line->tensor().string_at(0));
  return out;
}

TEST_F(TextLineDatasetTest, LinesOfSeveralFilesInOrder) {
  const std::string a = write("a.txt", "first\r\nsecond\n\nfourth");  // CRLF, an empty line, no final ending
  const std::string b = write("b.txt", "caf\xc3\xa9\n");
  const std::string empty = write("empty.txt", "");
  const Dataset lines = text_line_dataset({a, empty, b});
  EXPECT_EQ(all_lines(lines), (std::vector<std::string>{"first", "second", "", "fourth", "caf\xc3\xa9"}));
  // A second pass reads the files again.
  EXPECT_EQ(all_lines(lines).size(), 5u);
  auto it = lines.iterator();
  const Tensor first = it.next()->tensor();
  EXPECT_EQ(first.dtype(), kString);
  EXPECT_EQ(first.rank(), 0);  // a scalar string, as tf.data's TextLineDataset yields
  EXPECT_EQ(first.string_at(0), "first");
  EXPECT_EQ(lines.cardinality(), kUnknownCardinality);
}

TEST_F(TextLineDatasetTest, LinesLongerThanTheReadBuffer) {
  // Random line lengths up to 600 KiB cross LineReader's 256 KiB buffer in every way.
  std::mt19937 rng(3);
  std::vector<std::string> expected;
  std::string text;
  for (int i = 0; i < 23; ++i) {
    const size_t length = i % 5 == 0 ? rng() % (600 * 1024) : rng() % 100;
    std::string line(length, '\0');
    for (char& c : line) c = static_cast<char>('a' + rng() % 26);
    expected.push_back(line);
    text += line + (i % 2 == 0 ? "\n" : "\r\n");
  }
  const std::string path = write("long.txt", text);
  EXPECT_EQ(all_lines(text_line_dataset({path})), expected);
  LineReader reader(path);
  while (reader.next()) {
  }
  EXPECT_EQ(reader.line_number(), 23);
}

TEST_F(TextLineDatasetTest, RestoresAPositionMidFile) {
  std::string text;
  for (int i = 0; i < 1023; ++i) text += "line " + std::to_string(i) + "\n";
  const std::string a = write("a.txt", text);
  const std::string b = write("b.txt", "tail 1\ntail 2\n");
  const Dataset lines = text_line_dataset({a, b});
  auto it = lines.iterator();
  for (int i = 0; i < 1020; ++i) it.next();
  const IteratorPosition position = it.position();
  auto restored = lines.iterator();
  restored.restore(position);
  std::vector<std::string> rest;
  while (auto line = restored.next()) rest.push_back(line->tensor().string_at(0));
  EXPECT_EQ(rest, (std::vector<std::string>{"line 1020", "line 1021", "line 1022", "tail 1", "tail 2"}));
}

TEST_F(TextLineDatasetTest, BadInput) {
  EXPECT_THAT([&] { text_line_dataset({write("ok.txt", "x"), (dir_ / "missing.txt").string()}); },
              ThrowsMessage<IOError>(HasSubstr("missing.txt: cannot open: No such file or directory")));
  EXPECT_THAT([&] { text_line_dataset({dir_.string()}); },
              ThrowsMessage<IOError>(HasSubstr("cannot open: Is a directory")));
  EXPECT_THAT([&] { text_line_dataset({}); },
              ThrowsMessage<ValueError>(HasSubstr("text_line_dataset: expected at least one file, got none")));
}

TEST_F(TextLineDatasetTest, InvalidUtf8NamesFileAndLine) {
  // Line 3 holds a lone continuation byte after "ab"; lines 1-2 come out before the error.
  const std::string path = write("bad.txt", "ok\ncaf\xc3\xa9\nab\x80" "c\nlater\n");
  auto it = text_line_dataset({path}).iterator();
  EXPECT_EQ(it.next()->tensor().string_at(0), "ok");
  EXPECT_EQ(it.next()->tensor().string_at(0), "caf\xc3\xa9");
  EXPECT_THAT([&] { it.next(); },
              ThrowsMessage<IOError>(HasSubstr("text_line_dataset: " + path +
                                               ":3: invalid UTF-8 at byte 2 of the line (byte 0x80)")));
  // Overlong forms, surrogates and truncated sequences are refused too.
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80"}) {
    auto one = text_line_dataset({write("one.txt", bad)}).iterator();
    EXPECT_THROW(one.next(), IOError) << bad;
  }
}

TEST(TextLineDatasetRealDataTest, WikiText2LineCount) {
  const auto dir = testing::shared_data_dir("wikitext-2");
  if (!dir) GTEST_SKIP() << testing::shared_data_missing("wikitext-2");
  const Dataset lines = text_line_dataset({*dir + "/wiki.valid.tokens"});
  int64_t count = 0, bytes = 0;
  for (auto it = lines.iterator(); auto line = it.next(); ++count) {
    bytes += static_cast<int64_t>(line->tensor().string_at(0).size());
  }
  EXPECT_EQ(count, 3760);
  EXPECT_EQ(bytes, 1121681 - 3760);  // every byte but the line endings
}

}  // namespace
}  // namespace chorus::data
