// ConfigReader: the one strict reader of configs, and its message formats (the families'
// own tests check the same messages through their from_config).
#include "chorus/core/config_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/test_names.h"

namespace chorus {
namespace {

using nlohmann::json;
using namespace testing::test_names;

TEST(ConfigReaderTest, ReadsTypedValuesWithDefaultsForAbsentOrNullKeys) {
  const json config = json::parse(R"({"units": 10, "rate": 0.5, "bias": true, "name": "d", "seed": null,
                                      "shape": [2, 3], "steps": 100.0})");
  ConfigReader r("Dense", config);
  EXPECT_EQ(r.integer("units", 0), 10);
  EXPECT_EQ(r.number("rate", 0), 0.5);
  EXPECT_TRUE(r.boolean("bias", false));
  EXPECT_EQ(r.string("name", ""), "d");
  EXPECT_EQ(r.optional<uint64_t>("seed"), std::nullopt);
  EXPECT_EQ(r.value<std::vector<int64_t>>("shape", {}), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r.integer("steps", 0), 100);  // an integral float is an integer
  EXPECT_EQ(r.number("absent", 7.0), 7.0);
  r.finish();
}

TEST(ConfigReaderTest, UnexpectedKeysNameTheOwnerAndTheClosestKnownKey) {
  const json config = json::parse(R"({"units": 10, "unitz": 3})");
  ConfigReader typo("Dense", config);
  typo.integer("units", 0);
  typo.boolean("use_bias", true);  // known though absent
  EXPECT_THAT([&] { typo.finish(); },
              ThrowsMessage<ValueError>(Eq("Dense: unexpected config key 'unitz' (did you mean 'units'?)")));
  const json far = json::parse(R"({"filters": 3})");
  ConfigReader unknown("Dense", far);
  unknown.integer("units", 1);
  EXPECT_THAT([&] { unknown.finish(); }, ThrowsMessage<ValueError>(Eq("Dense: unexpected config key 'filters'")));
}

TEST(ConfigReaderTest, WrongTypesNameTheKeyTheExpectedAndTheFoundType) {
  const json config = json::parse(R"({"units": "ten", "rate": [1], "bias": 1, "seed": -1, "dims": [1, 2.5],
                                      "big": 9223372036854775808, "name": 5})");
  ConfigReader r("Dense", config);
  EXPECT_THAT([&] { r.integer("units", 0); },
              ThrowsMessage<ValueError>(Eq("Dense: config key 'units': expected an integer, got \"ten\" (a string)")));
  EXPECT_THAT([&] { r.number("rate", 0); },
              ThrowsMessage<ValueError>(Eq("Dense: config key 'rate': expected a number, got [1] (a list)")));
  EXPECT_THAT([&] { r.boolean("bias", false); },
              ThrowsMessage<ValueError>(Eq("Dense: config key 'bias': expected a boolean, got 1 (an integer)")));
  EXPECT_THAT([&] { r.optional<uint64_t>("seed"); },
              ThrowsMessage<ValueError>(
                  Eq("Dense: config key 'seed': expected a non-negative integer, got -1 (an integer)")));
  EXPECT_THAT([&] { r.value<std::vector<int64_t>>("dims", {}); },
              ThrowsMessage<ValueError>(
                  Eq("Dense: config key 'dims': expected a list of (an integer), got [1,2.5] (a list)")));
  EXPECT_THAT([&] { r.integer("big", 0); },
              ThrowsMessage<ValueError>(
                  Eq("Dense: config key 'big': expected an integer, got 9223372036854775808 (an integer)")));
  EXPECT_THAT([&] { r.string("name", ""); },
              ThrowsMessage<ValueError>(Eq("Dense: config key 'name': expected a string, got 5 (an integer)")));
}

TEST(ConfigReaderTest, AcceptedAndInertKeys) {
  const json config = json::parse(R"({"dtype": {"class_name": "DTypePolicy"}, "kernel_regularizer": null,
                                      "use_ema": false})");
  ConfigReader r("Dense", config);
  r.accept({"dtype"});
  r.accept_inert({"kernel_regularizer", "bias_regularizer"});
  r.accept_inert({"use_ema"}, false);
  r.finish();
  const json on = json::parse(R"({"kernel_regularizer": {"class_name": "L2"}})");
  ConfigReader refused("Dense", on);
  EXPECT_THAT([&] { refused.accept_inert({"kernel_regularizer"}); },
              ThrowsMessage<ValueError>(Eq("Dense: kernel_regularizer={\"class_name\":\"L2\"} is not supported")));
}

TEST(ConfigReaderTest, ConfigMustBeAnObjectWithTheRequiredKeys) {
  EXPECT_THAT([] { ConfigReader("Dense", json::parse("[1,2,3]")); },
              ThrowsMessage<ValueError>(Eq("Dense: expected a config object, got [1,2,3]")));
  const json empty = json::object();
  ConfigReader r("Dense", empty);
  EXPECT_THAT([&] { r.require({"units"}); }, ThrowsMessage<ValueError>(Eq("Dense: config is missing 'units'")));
}

}  // namespace
}  // namespace chorus
