#include "chorus/layers/preprocessing/hashing.h"

#include "chorus/layers/registry.h"
#include "tests/layers/layer_conformance.h"
#include "tests/layers/preprocessing/preprocessing_test_util.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;
using namespace testing::preprocessing_test_names;

// Keras's docstring input: [['A'], ['B'], ['C'], ['D'], ['E']].
Tensor letters() { return strings(Shape{5, 1}, {"A", "B", "C", "D", "E"}); }

TEST(HashingTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<Hashing>(3); },
      .inputs = letters(),
      .output_shapes = {Shape{5, 1}},
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<Hashing>(4, HashingOptions{.output_mode = OutputMode::kMultiHot}); },
      .inputs = ints(Shape{2, 3}, {1, 2, 3, 4, 5, 6}),
      .output_shapes = {Shape{2, 4}},
  });
}

// The examples of keras.layers.Hashing's docstring, with the outputs it documents.
TEST(HashingTest, FarmHash) {
  Hashing layer(3);
  expect_ints(layer(letters()), Shape{5, 1}, {1, 0, 1, 1, 2});
}

TEST(HashingTest, FarmHashWithAMaskValue) {
  Hashing layer(3, {.mask_value = ""});
  expect_ints(layer(strings(Shape{5, 1}, {"A", "B", "", "C", "D"})), Shape{5, 1}, {1, 1, 0, 2, 2});
}

TEST(HashingTest, SipHash) {
  Hashing layer(3, {.salt = text::SipHashKey{133, 137}});
  expect_ints(layer(letters()), Shape{5, 1}, {1, 2, 1, 0, 2});
}

TEST(HashingTest, SipHashWithASingleIntegerSalt) {
  // Keras's salt=133 is [133, 133].
  const auto layer = layer_from_config(
      nlohmann::json::parse(R"({"class_name": "Hashing", "config": {"num_bins": 3, "salt": 133}})"));
  expect_ints((*layer)(letters()), Shape{5, 1}, {0, 0, 2, 1, 0});
  EXPECT_EQ(layer->get_config()["salt"], nlohmann::json::parse("[133, 133]"));
}

TEST(HashingTest, IntegersHashTheirDecimalText) {
  Hashing layer(7);
  const Tensor ids = ints(Shape{4}, {0, 42, -5, 123456789012345});
  const auto bins = layer(ids).to_vector<int64_t>();
  const std::vector<std::string> texts = {"0", "42", "-5", "123456789012345"};
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(bins[i], static_cast<int64_t>(text::fingerprint64(texts[i]) % 7)) << texts[i];
  }
  // int32 and floats (truncated to integers first) give the same bins.
  expect_ints(layer(from_values<int32_t>({0, 42, -5})), Shape{3}, {bins[0], bins[1], bins[2]});
  expect_ints(layer(from_values({0.5f, 42.9f, -5.2f})), Shape{3}, {bins[0], bins[1], bins[2]});
  // An integer mask value.
  Hashing masked(7, {.mask_value = int64_t{42}});
  const auto masked_bins = masked(ids).to_vector<int64_t>();
  EXPECT_EQ(masked_bins[1], 0);
  EXPECT_EQ(masked_bins[0], static_cast<int64_t>(text::fingerprint64("0") % 6) + 1);
}

TEST(HashingTest, OutputModes) {
  Hashing one_hot(3, {.output_mode = OutputMode::kOneHot});
  // The trailing dim of 1 is encoded on: bins 1, 0, 1, 1, 2.
  expect_floats(one_hot(letters()), Shape{5, 3}, {0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1});
  Hashing count(3, {.output_mode = OutputMode::kCount});
  expect_floats(count(strings(Shape{1, 5}, {"A", "B", "C", "D", "E"})), Shape{1, 3}, {1, 3, 1});
  Hashing multi_hot(3, {.output_mode = OutputMode::kMultiHot});
  expect_floats(multi_hot(strings(Shape{2, 2}, {"A", "C", "B", "E"})), Shape{2, 3}, {0, 1, 0, 1, 0, 1});
}

TEST(HashingTest, ConfigRoundTrip) {
  Hashing layer(5, {.mask_value = "", .salt = text::SipHashKey{1, 2}, .output_mode = OutputMode::kCount,
                    .name = "h"});
  const nlohmann::json config = serialize_layer(layer);
  EXPECT_EQ(config, nlohmann::json::parse(R"({"class_name": "Hashing", "config": {"name": "h", "trainable": true, "dtype": "float32",
      "num_bins": 5, "salt": [1, 2], "mask_value": "", "output_mode": "count", "sparse": false}})"));
  EXPECT_EQ(serialize_layer(*layer_from_config(config)), config);
}

TEST(HashingTest, Errors) {
  EXPECT_THAT([] { Hashing(0); },
              ThrowsMessage<ValueError>(HasSubstr("Hashing: expected num_bins > 0. Received: num_bins=0")));
  EXPECT_THAT([] { Hashing(3, {.output_mode = OutputMode::kTfIdf}); },
              ThrowsMessage<ValueError>(HasSubstr("Hashing: expected output_mode int, one_hot, multi_hot or count. "
                                                  "Received: output_mode=tf_idf")));
  Hashing layer(3, {.mask_value = "", .name = "h"});
  EXPECT_THAT([&] { layer(ints(Shape{2}, {1, 2})); },
              ThrowsMessage<ValueError>(HasSubstr("h: mask_value is a string but the inputs are numbers")));
  EXPECT_THAT([] { layer_from_config({{"class_name", "Hashing"}, {"config", {{"num_bins", 3}, {"salt", "x"}}}}); },
              ThrowsMessage<ValueError>(HasSubstr("Hashing: the salt can only be a list of 2 integers or a single "
                                                  "integer. Received: salt=\"x\"")));
}

}  // namespace
}  // namespace chorus::layers
