#include "chorus/layers/preprocessing/integer_lookup.h"

#include <fstream>

#include "chorus/data/dataset.h"
#include "chorus/layers/registry.h"
#include "tests/layers/layer_conformance.h"
#include "tests/layers/preprocessing/preprocessing_test_util.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;
using namespace testing::preprocessing_test_names;

const std::vector<int64_t> kIntegerVocab = {12, 36, 1138, 42};

// Keras's docstring data: [[12, 1138, 42], [42, 1000, 36]] (1000 is OOV).
Tensor integer_docstring_data() { return ints(Shape{2, 3}, {12, 1138, 42, 42, 1000, 36}); }
// [[12, 1138, 42, 42], [42, 7, 36, 7]].
Tensor integer_docstring_data4() { return ints(Shape{2, 4}, {12, 1138, 42, 42, 42, 7, 36, 7}); }

TEST(IntegerLookupTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<IntegerLookup>(IntegerLookupOptions{.vocabulary = kIntegerVocab}); },
      .inputs = integer_docstring_data(),
      .output_shapes = {Shape{2, 3}},
  });
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<IntegerLookup>(
                IntegerLookupOptions{.vocabulary = kIntegerVocab, .output_mode = OutputMode::kCount});
          },
      .inputs = integer_docstring_data4(),
      .output_shapes = {Shape{2, 5}},
  });
}

// The examples of keras.layers.IntegerLookup's docstring, with the outputs it documents.
TEST(IntegerLookupTest, KnownVocabulary) {
  IntegerLookup layer({.vocabulary = kIntegerVocab});
  expect_ints(layer(integer_docstring_data()), Shape{2, 3}, {1, 3, 4, 4, 0, 2});
  // int32 inputs work the same.
  expect_ints(layer(from_values<int32_t>({12, 1138, 42, 42, 1000, 36}, Shape{2, 3})), Shape{2, 3},
              {1, 3, 4, 4, 0, 2});
}

TEST(IntegerLookupTest, VocabularyFromAFileOfIntegers) {
  const std::string path = ::testing::TempDir() + "/integer_lookup_vocabulary.txt";
  std::ofstream(path) << "12\n36\n1138\n42\n";
  IntegerLookup layer({.vocabulary_file = path});
  expect_ints(layer(integer_docstring_data()), Shape{2, 3}, {1, 3, 4, 4, 0, 2});
  std::ofstream(path) << "12\n11x\n";
  EXPECT_THAT([&] { IntegerLookup({.vocabulary_file = path}); },
              ThrowsMessage<ValueError>(HasSubstr(path + ":2: expected an integer token, found \"11x\"")));
}

TEST(IntegerLookupTest, AdaptedVocabulary) {
  IntegerLookup layer;
  layer.adapt(integer_docstring_data());
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<int64_t>{-1, 42, 1138, 1000, 36, 12}));
  expect_ints(layer(integer_docstring_data()), Shape{2, 3}, {5, 2, 1, 1, 3, 4});
}

TEST(IntegerLookupTest, MultipleOovIndicesUseFloorMod) {
  IntegerLookup layer({.num_oov_indices = 2, .vocabulary = kIntegerVocab});
  // 37 -> 37 mod 2 = 1, 1000 -> 0.
  expect_ints(layer(ints(Shape{2, 3}, {12, 1138, 42, 37, 1000, 36})), Shape{2, 3}, {2, 4, 5, 1, 0, 3});
  // Negative tokens take Python's floor modulo: -3 mod 2 = 1.
  expect_ints(layer(ints(Shape{1}, {-3})), Shape{1}, {1});
}

TEST(IntegerLookupTest, FarmHashSpreadsStructuredOovTokens) {
  const Tensor oov = ints(Shape{6}, {100, 300, 700, 1100, 1700, 2000});
  IntegerLookup floormod({.num_oov_indices = 4, .vocabulary = {10, 20, 30}, .oov_method = OovMethod::kFloorMod});
  IntegerLookup farmhash({.num_oov_indices = 4, .vocabulary = {10, 20, 30}, .oov_method = OovMethod::kFarmHash});
  expect_ints(floormod(oov), Shape{6}, {0, 0, 0, 0, 0, 0});
  expect_ints(farmhash(oov), Shape{6}, {3, 3, 2, 2, 0, 1});
}

TEST(IntegerLookupTest, OneHot) {
  IntegerLookup layer({.vocabulary = kIntegerVocab, .output_mode = OutputMode::kOneHot});
  expect_floats(layer(ints(Shape{5}, {12, 36, 1138, 42, 7})), Shape{5, 5},
                {0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0});
}

TEST(IntegerLookupTest, MultiHotAndCount) {
  IntegerLookup multi_hot({.vocabulary = kIntegerVocab, .output_mode = OutputMode::kMultiHot});
  expect_floats(multi_hot(integer_docstring_data4()), Shape{2, 5}, {0, 1, 0, 1, 1, 1, 0, 1, 0, 1});
  IntegerLookup count({.vocabulary = kIntegerVocab, .output_mode = OutputMode::kCount});
  expect_floats(count(integer_docstring_data4()), Shape{2, 5}, {0, 1, 0, 1, 2, 2, 0, 1, 0, 1});
  // pad_to_max_tokens widens the vectors to max_tokens.
  IntegerLookup padded(
      {.max_tokens = 8, .vocabulary = kIntegerVocab, .output_mode = OutputMode::kCount, .pad_to_max_tokens = true});
  expect_floats(padded(integer_docstring_data4()), Shape{2, 8}, {0, 1, 0, 1, 2, 0, 0, 0, 2, 0, 1, 0, 1, 0, 0, 0});
}

TEST(IntegerLookupTest, TfIdf) {
  IntegerLookup layer({.vocabulary = kIntegerVocab, .idf_weights = {0.25f, 0.75f, 0.6f, 0.4f},
                       .output_mode = OutputMode::kTfIdf});
  expect_floats(layer(integer_docstring_data4()), Shape{2, 5}, {0, 0.25f, 0, 0.6f, 0.8f, 1.0f, 0, 0.75f, 0, 0.4f});
  IntegerLookup with_oov({.vocabulary = {-1, 12, 36, 1138, 42}, .idf_weights = {0.9f, 0.25f, 0.75f, 0.6f, 0.4f},
                          .output_mode = OutputMode::kTfIdf});
  expect_floats(with_oov(integer_docstring_data4()), Shape{2, 5}, {0, 0.25f, 0, 0.6f, 0.8f, 1.8f, 0, 0.75f, 0, 0.4f});
}

TEST(IntegerLookupTest, InverseLookup) {
  IntegerLookup layer({.vocabulary = kIntegerVocab, .invert = true});
  expect_ints(layer(ints(Shape{2, 3}, {1, 3, 4, 4, 0, 2})), Shape{2, 3}, {12, 1138, 42, 42, -1, 36});
}

TEST(IntegerLookupTest, ForwardAndInverseLookupPairs) {
  IntegerLookup layer({.vocabulary = kIntegerVocab});
  IntegerLookup inverse({.vocabulary = layer.get_vocabulary(), .invert = true});
  expect_ints(inverse(layer(integer_docstring_data())), Shape{2, 3}, {12, 1138, 42, 42, -1, 36});
}

TEST(IntegerLookupTest, MaskTokenAndConfigRoundTrip) {
  IntegerLookup layer({.mask_token = 0, .name = "ids"});
  layer.adapt(data::Dataset::from_tensor_slices(ints(Shape{6}, {5, 0, 5, 9, 0, 0})).batch(4));
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<int64_t>{0, -1, 5, 9}));
  expect_ints(layer(ints(Shape{4}, {0, 9, 5, 77})), Shape{4}, {0, 3, 2, 1});
  const nlohmann::json config = serialize_layer(layer);
  EXPECT_EQ(config["config"]["vocabulary_dtype"], "int64");
  EXPECT_EQ(config["config"]["vocabulary"], nlohmann::json::parse("[0, -1, 5, 9]"));
  const auto clone = layer_from_config(nlohmann::json::parse(config.dump()));
  expect_ints((*clone)(ints(Shape{4}, {0, 9, 5, 77})), Shape{4}, {0, 3, 2, 1});
  EXPECT_EQ(serialize_layer(*clone), config);
}

TEST(IntegerLookupTest, Errors) {
  EXPECT_THAT([] { IntegerLookup({.num_oov_indices = 2, .salt = text::SipHashKey{1, 2}}); },
              ThrowsMessage<ValueError>(HasSubstr("IntegerLookup: a salt is only used with oov_method farmhash. "
                                                  "Received: oov_method=floormod")));
  EXPECT_THAT([] { IntegerLookup({.pad_to_max_tokens = true}); },
              ThrowsMessage<ValueError>(HasSubstr("IntegerLookup: pad_to_max_tokens needs max_tokens")));
  IntegerLookup layer({.vocabulary = kIntegerVocab, .name = "ids"});
  EXPECT_THAT([&] { layer(Tensor::from_strings({"12"})); },
              ThrowsMessage<DTypeError>(HasSubstr("ids: expected int32 or int64 inputs, got dtype string")));
  EXPECT_THAT([&] { layer(from_values({1.f, 2.f})); },
              ThrowsMessage<DTypeError>(HasSubstr("ids: expected int32 or int64 inputs, got dtype float32")));
  IntegerLookup inverse({.vocabulary = kIntegerVocab, .invert = true, .name = "inv"});
  EXPECT_THAT([&] { inverse(from_values({1.f})); },
              ThrowsMessage<DTypeError>(HasSubstr("inv: an inverted lookup expected int32 or int64 indices, got "
                                                  "dtype float32")));
  EXPECT_THAT([] { IntegerLookup({.vocabulary = {12, -1}, .invert = true, .name = "inv2"}); },
              ThrowsMessage<ValueError>(HasSubstr("inv2: found the OOV token -1 at vocabulary index 1")));
  IntegerLookup empty({.name = "empty"});
  EXPECT_THAT([&] { empty.adapt(data::Dataset::from_tensor_slices(ints(Shape{0}, {})).batch(2)); },
              ThrowsMessage<ValueError>(HasSubstr("empty: adapt was given an empty dataset (no elements)")));
  EXPECT_THAT(
      [] {
        layer_from_config(nlohmann::json::parse(
            R"({"class_name": "IntegerLookup", "config": {"vocabulary_dtype": "int32"}})"));
      },
      ThrowsMessage<ValueError>(HasSubstr("IntegerLookup: only vocabulary_dtype int64 is supported")));
}

}  // namespace
}  // namespace chorus::layers
