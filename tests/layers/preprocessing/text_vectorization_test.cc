#include "chorus/layers/preprocessing/text_vectorization.h"

#include <cctype>
#include <cmath>

#include "chorus/data/dataset.h"
#include "chorus/layers/registry.h"
#include "chorus/text/strings.h"
#include "tests/layers/layer_conformance.h"
#include "tests/layers/preprocessing/preprocessing_test_util.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;
using namespace testing::preprocessing_test_names;

std::vector<std::string> tokens(const TextVectorization& layer, const Tensor& texts) {
  return testing::string_values(layer.preprocess(texts).values());
}

TEST(TextVectorizationTest, Conformance) {
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<TextVectorization>(
                TextVectorizationOptions{.output_sequence_length = 4, .vocabulary = {"earth", "wind", "and", "fire"}});
          },
      .inputs = strings(Shape{2, 1}, {"Earth, wind & fire!", "wind"}),
      .output_shapes = {Shape{2, 4}},
  });
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<TextVectorization>(TextVectorizationOptions{
                .output_mode = OutputMode::kCount, .vocabulary = {"earth", "wind", "and", "fire"}});
          },
      .inputs = Tensor::from_strings({"Earth, wind & fire!", "wind wind"}),
      .output_shapes = {Shape{2, 5}},
  });
}

// The examples of keras.layers.TextVectorization's docstring, with the outputs it documents.
TEST(TextVectorizationTest, AdaptThenVectorize) {
  TextVectorization layer({.max_tokens = 5000, .output_mode = OutputMode::kInt, .output_sequence_length = 4});
  layer.adapt(Tensor::from_strings({"foo bar", "bar baz", "baz bada boom"}));
  // bar and baz occur twice (baz sorts first), then boom, foo, bada once, the larger first.
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "baz", "bar", "foo", "boom", "bada"}));
  expect_ints(layer(strings(Shape{2, 1}, {"foo qux bar", "qux baz"})), Shape{2, 4}, {4, 1, 3, 0, 1, 2, 0, 0});
}

TEST(TextVectorizationTest, GivenVocabularyGainsThePaddingAndOovTokens) {
  TextVectorization layer({.max_tokens = 5000, .output_mode = OutputMode::kInt, .output_sequence_length = 4,
                           .vocabulary = {"earth", "wind", "and", "fire"}});
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "earth", "wind", "and", "fire"}));
  EXPECT_EQ(layer.vocabulary_size(), 6);
}

TEST(TextVectorizationTest, Standardize) {
  const Tensor text = Tensor::from_strings({"Hello, World! It's   \"C++\"."});
  EXPECT_EQ(tokens(TextVectorization(), text), (std::vector<std::string>{"hello", "world", "its", "c"}));
  EXPECT_EQ(tokens(TextVectorization({.standardize = Standardize::kLower}), text),
            (std::vector<std::string>{"hello,", "world!", "it's", "\"c++\"."}));
  EXPECT_EQ(tokens(TextVectorization({.standardize = Standardize::kStripPunctuation}), text),
            (std::vector<std::string>{"Hello", "World", "Its", "C"}));
  EXPECT_EQ(tokens(TextVectorization({.standardize = Standardize::kNone}), text),
            (std::vector<std::string>{"Hello,", "World!", "It's", "\"C++\"."}));
  // Lowercasing is ASCII only, as tf.strings.lower.
  EXPECT_EQ(tokens(TextVectorization(), Tensor::from_strings({"ÉCOLE Über"})),
            (std::vector<std::string>{"École", "Über"}));
}

TEST(TextVectorizationTest, SplitAndNgrams) {
  EXPECT_EQ(tokens(TextVectorization({.split = Split::kCharacter}), Tensor::from_strings({"Né a"})),
            (std::vector<std::string>{"n", "é", " ", "a"}));
  EXPECT_EQ(tokens(TextVectorization({.split = Split::kNone}), Tensor::from_strings({"A b"})),
            (std::vector<std::string>{"a b"}));
  EXPECT_EQ(tokens(TextVectorization({.ngrams = {1, 2}}), Tensor::from_strings({"a b c", "d"})),
            (std::vector<std::string>{"a", "b", "c", "a b", "b c", "d"}));
  EXPECT_EQ(tokens(TextVectorization({.ngrams = {3}}), Tensor::from_strings({"a b c d"})),
            (std::vector<std::string>{"a b c", "b c d"}));
  const RaggedTensor rows = TextVectorization({.ngrams = {2}}).preprocess(Tensor::from_strings({"a b c", "d"}));
  EXPECT_EQ(rows.row_lengths().to_vector<int64_t>(), (std::vector<int64_t>{2, 0}));
}

// Keras's callables: a standardize that keeps only letters, a split on commas; with
// ngrams and a vocabulary as the built-in ones; configs mark them and cannot rebuild them.
TEST(TextVectorizationTest, CustomStandardizeAndSplitCallables) {
  auto letters_and_commas = [](std::string_view text) {
    std::string out;
    for (char c : text) {
      if (std::isalpha(static_cast<unsigned char>(c)) || c == ',') out += static_cast<char>(std::tolower(c));
    }
    return out;
  };
  auto on_commas = [](std::string_view text) { return text::strings::split(text, ","); };
  TextVectorization layer({.custom_standardize = letters_and_commas,
                           .custom_split = on_commas,
                           .ngrams = {1, 2},
                           .vocabulary = {"red", "blue", "red blue"}});
  EXPECT_EQ(tokens(layer, Tensor::from_strings({"Red 1,BLUE!", "Green"})),
            (std::vector<std::string>{"red", "blue", "red blue", "green"}));
  expect_ints(layer(Tensor::from_strings({"Red 1,BLUE!", "Green"})), Shape{2, 3}, {2, 3, 4, 1, 0, 0});
  const nlohmann::json config = layer.get_config();
  EXPECT_EQ(config["standardize"], (nlohmann::json{{"class_name", "function"}, {"config", "custom"}}));
  EXPECT_EQ(config["split"]["config"], "custom");
  EXPECT_THAT([&] { TextVectorization::from_config(config); },
              ThrowsMessage<ValueError>(HasSubstr("a custom callable cannot be rebuilt from a config: build the layer "
                                                  "in code with custom_standardize")));
}

TEST(TextVectorizationTest, SequencesPadToTheLongestRowOrTruncate) {
  TextVectorization padded({.vocabulary = {"a", "b", "c"}});
  expect_ints(padded(Tensor::from_strings({"a b c a", "c", ""})), Shape{3, 4}, {2, 3, 4, 2, 4, 0, 0, 0, 0, 0, 0, 0});
  TextVectorization truncated({.output_sequence_length = 2, .vocabulary = {"a", "b", "c"}});
  expect_ints(truncated(Tensor::from_strings({"a b c a", "x"})), Shape{2, 2}, {2, 3, 1, 0});
  // One string (rank 0), as a dataset.map over unbatched lines sees it.
  expect_ints(truncated(Tensor::from_string("c b a")), Shape{2}, {4, 3});
  TextVectorization ragged({.vocabulary = {"a", "b", "c"}, .ragged = true});
  const RaggedTensor out = RaggedTensor::from_tree(ragged(Tree(Tensor::from_strings({"a b c a", "c"}))));
  EXPECT_EQ(out.row_splits().to_vector<int64_t>(), (std::vector<int64_t>{0, 4, 5}));
  EXPECT_EQ(out.values().to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 4, 2, 4}));
}

TEST(TextVectorizationTest, BagOfWordsModes) {
  const std::vector<std::string> vocab = {"earth", "wind", "and", "fire"};
  const Tensor texts = Tensor::from_strings({"earth wind earth", "water"});
  TextVectorization multi_hot({.output_mode = OutputMode::kMultiHot, .vocabulary = vocab});
  expect_floats(multi_hot(texts), Shape{2, 5}, {0, 1, 1, 0, 0, 1, 0, 0, 0, 0});
  TextVectorization count({.output_mode = OutputMode::kCount, .vocabulary = vocab});
  expect_floats(count(texts), Shape{2, 5}, {0, 2, 1, 0, 0, 1, 0, 0, 0, 0});
  expect_floats(count(Tensor::from_string("fire and fire")), Shape{5}, {0, 0, 0, 1, 2});
  TextVectorization tf_idf({.output_mode = OutputMode::kTfIdf});
  tf_idf.adapt(Tensor::from_strings({"earth wind", "earth fire", "earth"}));
  // earth is in all 3 documents, wind and fire in 1: idf = log(1 + 3 / (1 + df)).
  const float earth = std::log(1 + 3.f / 4), rare = std::log(1 + 3.f / 2);
  EXPECT_EQ(tf_idf.get_vocabulary(), (std::vector<std::string>{"[UNK]", "earth", "wind", "fire"}));
  expect_floats(tf_idf(Tensor::from_strings({"earth earth fire"})), Shape{1, 4}, {0, 2 * earth, 0, rare});
}

TEST(TextVectorizationTest, AdaptFromADataset) {
  const Tensor lines = Tensor::from_strings({"the cat", "the dog", "a cat", "the end"});
  TextVectorization batched({.max_tokens = 4});
  batched.adapt(data::Dataset::from_tensor_slices(lines).batch(3));
  EXPECT_EQ(batched.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "the", "cat"}));
  TextVectorization unbatched;  // each element a single string
  unbatched.adapt(data::Dataset::from_tensor_slices(lines));
  EXPECT_EQ(unbatched.get_vocabulary(),
            (std::vector<std::string>{"", "[UNK]", "the", "cat", "end", "dog", "a"}));
}

TEST(TextVectorizationTest, WorksInDatasetMapOnWorkerThreads) {
  auto layer = std::make_shared<TextVectorization>(
      TextVectorizationOptions{.output_sequence_length = 3, .vocabulary = {"a", "b"}});
  std::vector<std::string> lines;
  for (int i = 0; i < 200; ++i) lines.push_back(i % 2 ? "A b" : "b, x");
  auto ds = data::Dataset::from_tensor_slices(Tensor::from_strings(lines))
                .map([layer](const Tree& x) { return Tree((*layer)(x.tensor())); }, {.num_parallel_calls = 4})
                .batch(200);
  const Tensor out = ds.iterator().next()->tensor();
  ASSERT_EQ(out.shape(), (Shape{200, 3}));
  const auto got = out.to_vector<int64_t>();
  for (int i = 0; i < 200; ++i) {
    const std::vector<int64_t> want = i % 2 ? std::vector<int64_t>{2, 3, 0} : std::vector<int64_t>{3, 1, 0};
    EXPECT_EQ(std::vector<int64_t>(got.begin() + 3 * i, got.begin() + 3 * i + 3), want) << i;
  }
}

TEST(TextVectorizationTest, ConfigRoundTrip) {
  TextVectorization layer({.max_tokens = 10, .standardize = Standardize::kLower, .split = Split::kCharacter,
                           .ngrams = {1, 2}, .output_sequence_length = 5, .name = "chars"});
  layer.adapt(Tensor::from_strings({"abab", "ba"}));
  const nlohmann::json config = serialize_layer(layer);
  EXPECT_EQ(config["config"]["standardize"], "lower");
  EXPECT_EQ(config["config"]["split"], "character");
  EXPECT_EQ(config["config"]["ngrams"], nlohmann::json::parse("[1, 2]"));
  EXPECT_EQ(config["config"]["output_sequence_length"], 5);
  const auto clone = layer_from_config(nlohmann::json::parse(config.dump()));
  EXPECT_EQ(serialize_layer(*clone), config);
  const Tensor text = Tensor::from_strings({"Abba"});
  EXPECT_TRUE(testing::tensors_near((*clone)(text), layer(text), 0, 0));
  // Keras's ngrams=2 means widths 1 and 2.
  const auto keras = layer_from_config(nlohmann::json::parse(R"({"class_name": "TextVectorization", "config":
      {"ngrams": 2, "standardize": null, "split": "whitespace", "vocabulary": ["", "[UNK]", "x", "x y"]}})"));
  expect_ints((*keras)(Tensor::from_strings({"x y"})), Shape{1, 3}, {2, 1, 3});
}

TEST(TextVectorizationTest, Errors) {
  EXPECT_THAT([] { TextVectorization({.output_mode = OutputMode::kMultiHot, .output_sequence_length = 3}); },
              ThrowsMessage<ValueError>(HasSubstr("TextVectorization: output_sequence_length is only used with "
                                                  "output_mode int. Received: output_mode=multi_hot")));
  EXPECT_THAT([] { TextVectorization({.output_mode = OutputMode::kCount, .ragged = true}); },
              ThrowsMessage<ValueError>(HasSubstr("TextVectorization: ragged is only used with output_mode int")));
  EXPECT_THAT([] { TextVectorization({.ngrams = {0}}); },
              ThrowsMessage<ValueError>(HasSubstr("TextVectorization: expected ngram widths >= 1. Received: "
                                                  "ngrams=[0]")));
  EXPECT_THAT([] { TextVectorization({.max_tokens = 1}); },
              ThrowsMessage<ValueError>(HasSubstr("TextVectorization: expected max_tokens > 1 when it is set")));
  TextVectorization layer({.vocabulary = {"a"}, .name = "vec"});
  EXPECT_THAT([&] { layer(testing::ints(Shape{2}, {1, 2})); },
              ThrowsMessage<DTypeError>(HasSubstr("vec: expected a string tensor, got dtype int64")));
  EXPECT_THAT([&] { layer(strings(Shape{1, 2}, {"a", "b"})); },
              ThrowsMessage<ValueError>(HasSubstr("vec: to split strings into tokens the input rank must be 1, or 2 "
                                                  "with a last dimension of 1. Received: inputs of shape (1, 2)")));
  TextVectorization empty({.name = "empty"});
  EXPECT_THAT([&] { empty.adapt(Tensor::from_strings(std::vector<std::string>{})); },
              ThrowsMessage<ValueError>(HasSubstr("empty: adapt was given an empty tensor of shape (0,)")));
  EXPECT_THAT([&] { empty.adapt(data::Dataset::from_tensor_slices(Tensor::from_strings({"a"})).take(0)); },
              ThrowsMessage<ValueError>(HasSubstr("empty: adapt was given an empty dataset (no elements)")));
  EXPECT_THAT([&] { empty.adapt(Tensor::from_strings({"  ", "!?"})); },
              ThrowsMessage<ValueError>(HasSubstr("empty: adapt found no tokens to learn")));
  EXPECT_THAT(
      [] {
        layer_from_config(
            nlohmann::json::parse(R"({"class_name": "TextVectorization", "config": {"split": "sentence"}})"));
      },
      ThrowsMessage<ValueError>(HasSubstr("TextVectorization: unknown split \"sentence\"; expected one of whitespace, "
                                          "character or null")));
}

}  // namespace
}  // namespace chorus::layers
