#include "chorus/callbacks/python_format.h"

#include <cmath>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/core/error.h"
#include "tests/testing/test_names.h"

namespace chorus::callbacks {
namespace {

using namespace testing::test_names;

// The expected texts are what Python 3 prints.
TEST(PythonReprTest, MatchesPythonRepr) {
  EXPECT_EQ(python_repr(0.1), "0.1");
  EXPECT_EQ(python_repr(1.0), "1.0");
  EXPECT_EQ(python_repr(-2.0), "-2.0");
  EXPECT_EQ(python_repr(-0.0), "-0.0");
  EXPECT_EQ(python_repr(0.0001), "0.0001");
  EXPECT_EQ(python_repr(1e-05), "1e-05");
  EXPECT_EQ(python_repr(1.5e-07), "1.5e-07");
  EXPECT_EQ(python_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(python_repr(1e16), "1e+16");
  EXPECT_EQ(python_repr(123456789012345680.0), "1.2345678901234568e+17");
  EXPECT_EQ(python_repr(0.30000001192092896), "0.30000001192092896");
  EXPECT_EQ(python_repr(static_cast<double>(0.1f)), "0.10000000149011612");
  EXPECT_EQ(python_repr(std::nan("")), "nan");
  EXPECT_EQ(python_repr(-std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(python_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(python_repr(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(PythonFixedTest, RoundsTiesToEvenLikePython) {
  EXPECT_EQ(python_fixed(0.125, 2), "0.12");
  EXPECT_EQ(python_fixed(0.375, 2), "0.38");
  EXPECT_EQ(python_fixed(2.5, 0), "2");
  EXPECT_EQ(python_fixed(0.123456789, 5), "0.12346");
  EXPECT_EQ(python_fixed(-std::numeric_limits<double>::quiet_NaN(), 5), "nan");
}

TEST(FormatTemplateTest, FormatsNamedFieldsWithPythonSpecs) {
  FormatTemplate t("ckpt-{epoch:02d}-{val_loss:.4f}.keras", "test");
  EXPECT_EQ(t.format({{"epoch", int64_t{3}}, {"val_loss", 0.12345678}}), "ckpt-03-0.1235.keras");
  EXPECT_EQ(t.field_names(), (std::vector<std::string>{"epoch", "val_loss"}));
  EXPECT_EQ(FormatTemplate("{epoch}/{loss}", "test").format({{"epoch", int64_t{12}}, {"loss", 1.0}}), "12/1.0");
  EXPECT_EQ(FormatTemplate("{epoch:.1f}", "test").format({{"epoch", int64_t{3}}}), "3.0");
  EXPECT_EQ(FormatTemplate("{epoch:>4}|{epoch:<3}|{epoch:x}", "test").format({{"epoch", int64_t{26}}}), "  26|26 |1a");
  EXPECT_EQ(FormatTemplate("{loss:e}", "test").format({{"loss", 0.1234567}}), "1.234567e-01");
  EXPECT_EQ(FormatTemplate("{loss:+.2f}", "test").format({{"loss", 0.5}}), "+0.50");
  EXPECT_EQ(FormatTemplate("{{epoch}} {{{epoch}}}", "test").format({{"epoch", int64_t{1}}}), "{epoch} {1}");
  EXPECT_EQ(FormatTemplate("no fields", "test").format({}), "no fields");
  // The first argument of a name wins.
  EXPECT_EQ(FormatTemplate("{a}", "test").format({{"a", int64_t{1}}, {"a", int64_t{2}}}), "1");
}

TEST(FormatTemplateTest, BadTemplatesAreErrors) {
  EXPECT_THAT([] { FormatTemplate("a}b", "ModelCheckpoint: filepath"); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "ModelCheckpoint: filepath: bad template \"a}b\": Single '}' encountered in format string")));
  EXPECT_THAT([] { FormatTemplate("ckpt-{epoch", "t"); },
              ThrowsMessage<ValueError>(HasSubstr("expected '}' before end of string")));
  EXPECT_THAT([] { FormatTemplate("ckpt-{}", "t"); },
              ThrowsMessage<ValueError>(HasSubstr("empty field name \"{}\": only named fields are supported")));
  EXPECT_THAT([] { FormatTemplate("{loss!r}", "t"); }, ThrowsMessage<ValueError>(HasSubstr("conversions")));
  EXPECT_THAT([] { FormatTemplate("{loss:{width}}", "t"); },
              ThrowsMessage<ValueError>(HasSubstr("nested fields in a format spec are not supported")));
}

TEST(FormatTemplateTest, MissingNamesAndBadSpecsAreErrors) {
  FormatTemplate t("ckpt-{val_acc:.2f}", "ModelCheckpoint: filepath");
  EXPECT_THAT([&] { t.format({{"epoch", int64_t{1}}, {"loss", 0.5}}); },
              ThrowsMessage<ValueError>(HasSubstr("ModelCheckpoint: filepath: failed to format \"ckpt-{val_acc:.2f}\": "
                                                  "no value named 'val_acc'; the values are: epoch, loss")));
  EXPECT_THAT([] { FormatTemplate("{loss:d}", "t").format({{"loss", 0.5}}); },
              ThrowsMessage<ValueError>(HasSubstr("format spec 'd' does not apply to float 'loss'")));
  EXPECT_THAT([] { FormatTemplate("{epoch:.2}", "t").format({{"epoch", int64_t{1}}}); },
              ThrowsMessage<ValueError>(HasSubstr("format spec '.2' does not apply to int 'epoch'")));
}

}  // namespace
}  // namespace chorus::callbacks
