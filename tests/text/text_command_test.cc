// Tests for `chorus text` (tools/chorus/text_command.cc), run through the built binary
// next to the test binary.
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/run_chorus.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus::text {
namespace {

using namespace testing::test_names;
namespace fs = std::filesystem;

using chorus::testing::run_chorus;

class TextCommandTest : public chorus::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    // ids: [PAD]0 [UNK]1 [CLS]2 [SEP]3 [MASK]4 hello5 world6 ,7 !8 un9 ##aff10 ##able11 cafe12
    vocab_ = write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\nworld\n,\n!\nun\n##aff\n##able\ncafe\n");
  }
  std::string vocab_;
};

TEST_F(TextCommandTest, TokenizesStdinLines) {
  const std::string input = write("in.txt", "Hello, world!\nunaffable zebra\n\nCaf\u00e9\n");
  const auto ids = run_chorus("text tokenize --vocabulary " + vocab_, input);
  if (ids.exit_code == -1) GTEST_SKIP() << "the chorus CLI is not built: " << ids.output;
  EXPECT_EQ(ids.exit_code, 0) << ids.output;
  EXPECT_EQ(ids.output, "5 7 6 8\n9 10 11 1\n\n1\n");
  const auto pieces = run_chorus("text tokenize --pieces --strip-accents --vocabulary " + vocab_, input);
  EXPECT_EQ(pieces.output, "hello , world !\nun ##aff ##able [UNK]\n\ncafe\n");
  const auto cased = run_chorus("text tokenize --no-lowercase --vocabulary " + vocab_, input);
  EXPECT_EQ(cased.output, "1 7 6 8\n9 10 11 1\n\n1\n");
}

TEST_F(TextCommandTest, TokenizeErrors) {
  const auto missing = run_chorus("text tokenize --vocabulary " + dir() + "/nope.txt");
  if (missing.exit_code == -1) GTEST_SKIP() << "the chorus CLI is not built: " << missing.output;
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("chorus: error: " + dir() + "/nope.txt: cannot open vocabulary file"));
  const std::string no_mask = write("no_mask.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n");
  const auto lacks = run_chorus("text tokenize --vocabulary " + no_mask);
  EXPECT_THAT(lacks.output, HasSubstr("lacks special token(s) [MASK]"));
  const std::string bad = write("bad.txt", "hello\nwor\xffld\n");
  const auto invalid = run_chorus("text tokenize --vocabulary " + vocab_, bad);
  EXPECT_EQ(invalid.exit_code, 1);
  EXPECT_THAT(invalid.output, HasSubstr("chorus: error: <stdin>:2: invalid UTF-8 at byte 3 of 6"));
}

TEST_F(TextCommandTest, LearnsAVocabulary) {
  std::string corpus;
  for (int i = 0; i < 20; ++i) corpus += "AB\n";
  const std::string path = write("corpus.txt", corpus);
  const auto out = run_chorus("text learn-vocabulary --size 10 " + path);
  if (out.exit_code == -1) GTEST_SKIP() << "the chorus CLI is not built: " << out.output;
  EXPECT_EQ(out.exit_code, 0) << out.output;
  // Lowercased by default; the same hand trace as WordPieceVocabularyTest.TracesTheLearnerByHand.
  EXPECT_EQ(out.output, "[PAD]\n[CLS]\n[SEP]\n[UNK]\n[MASK]\na\nb\nab\n##a\n##b\n");
  const auto cased = run_chorus("text learn-vocabulary --no-lowercase --size 10 " + path);
  EXPECT_EQ(cased.output, "[PAD]\n[CLS]\n[SEP]\n[UNK]\n[MASK]\nA\nB\nAB\n##A\n##B\n");
  const auto missing = run_chorus("text learn-vocabulary --size 10 " + dir() + "/nope.txt");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("nope.txt: cannot open"));
}

}  // namespace
}  // namespace chorus::text
