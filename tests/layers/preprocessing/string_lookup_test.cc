#include "chorus/layers/preprocessing/string_lookup.h"

#include <cmath>
#include <fstream>

#include "chorus/data/dataset.h"
#include "chorus/layers/registry.h"
#include "tests/layers/layer_conformance.h"
#include "tests/layers/preprocessing/preprocessing_test_util.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;
using namespace testing::preprocessing_test_names;

const std::vector<std::string> kStringVocab = {"a", "b", "c", "d"};

// Keras's docstring data: [["a", "c", "d"], ["d", "z", "b"]] ("z" is OOV).
Tensor string_docstring_data() { return strings(Shape{2, 3}, {"a", "c", "d", "d", "z", "b"}); }
// [["a", "c", "d", "d"], ["d", "z", "b", "z"]].
Tensor string_docstring_data4() { return strings(Shape{2, 4}, {"a", "c", "d", "d", "d", "z", "b", "z"}); }

TEST(StringLookupTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<StringLookup>(StringLookupOptions{.vocabulary = kStringVocab}); },
      .inputs = string_docstring_data(),
      .output_shapes = {Shape{2, 3}},
  });
  expect_layer_conforms({
      .make =
          [] {
            return std::make_shared<StringLookup>(
                StringLookupOptions{.vocabulary = kStringVocab, .output_mode = OutputMode::kMultiHot});
          },
      .inputs = string_docstring_data4(),
      .output_shapes = {Shape{2, 5}},
  });
  expect_layer_conforms({
      .make = [] { return std::make_shared<StringLookup>(StringLookupOptions{.vocabulary = kStringVocab, .invert = true}); },
      .inputs = testing::ints(Shape{2, 3}, {1, 3, 4, 4, 0, 2}),
      .output_shapes = {Shape{2, 3}},
  });
}

// The examples of keras.layers.StringLookup's docstring, with the outputs it documents.
TEST(StringLookupTest, KnownVocabulary) {
  StringLookup layer({.vocabulary = kStringVocab});
  expect_ints(layer(string_docstring_data()), Shape{2, 3}, {1, 3, 4, 4, 0, 2});
  EXPECT_EQ(layer.vocabulary_size(), 5);
}

// Keras's `vocabulary` as a path: one token per line, only the line ends stripped.
TEST(StringLookupTest, VocabularyFromAFileIsTheSameLookupAndIsSavedInTheConfig) {
  const std::string path = ::testing::TempDir() + "/string_lookup_vocabulary.txt";
  std::ofstream(path) << "a\nb\nc\nd\n";
  StringLookup layer({.vocabulary_file = path});
  expect_ints(layer(string_docstring_data()), Shape{2, 3}, {1, 3, 4, 4, 0, 2});
  EXPECT_EQ(layer.get_config()["vocabulary"], nlohmann::json(std::vector<std::string>{"[UNK]", "a", "b", "c", "d"}));
  std::ofstream(path) << "a \n b\n";  // spaces are part of the tokens
  EXPECT_EQ(StringLookup({.vocabulary_file = path}).get_vocabulary(), (std::vector<std::string>{"[UNK]", "a ", " b"}));
  EXPECT_THAT([] { StringLookup({.vocabulary_file = "/nonexistent/vocab.txt"}); },
              ThrowsMessage<ValueError>(HasSubstr("StringLookup: vocabulary file /nonexistent/vocab.txt does not exist")));
  EXPECT_THAT([&] { StringLookup({.vocabulary = kStringVocab, .vocabulary_file = path}); },
              ThrowsMessage<ValueError>(HasSubstr("give a vocabulary or a vocabulary_file, not both")));
  std::ofstream(path) << "a\nb\na\n";
  EXPECT_THAT([&] { StringLookup({.vocabulary_file = path}); },
              ThrowsMessage<ValueError>(HasSubstr("the vocabulary repeats tokens (they must be unique)")));
}

TEST(StringLookupTest, AdaptedVocabularyIsSortedByFrequencyThenByInverseOrder) {
  StringLookup layer;
  layer.adapt(string_docstring_data());
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<std::string>{"[UNK]", "d", "z", "c", "b", "a"}));
  expect_ints(layer(string_docstring_data()), Shape{2, 3}, {5, 3, 1, 1, 2, 4});
}

TEST(StringLookupTest, MultipleOovIndicesHashWithFarmHash) {
  StringLookup layer({.num_oov_indices = 2, .vocabulary = kStringVocab});
  // "m" goes to OOV index 0 and "z" to 1 (Fingerprint64 mod 2); in-vocabulary indices shift by 1.
  expect_ints(layer(strings(Shape{2, 3}, {"a", "c", "d", "m", "z", "b"})), Shape{2, 3}, {2, 4, 5, 0, 1, 3});
}

TEST(StringLookupTest, OneHot) {
  StringLookup layer({.vocabulary = kStringVocab, .output_mode = OutputMode::kOneHot});
  expect_floats(layer(Tensor::from_strings({"a", "b", "c", "d", "z"})), Shape{5, 5},
                {0, 1, 0, 0, 0,  //
                 0, 0, 1, 0, 0,  //
                 0, 0, 0, 1, 0,  //
                 0, 0, 0, 0, 1,  //
                 1, 0, 0, 0, 0});
  // A trailing dim of 1 is encoded on; a scalar gives one vector.
  expect_floats(layer(strings(Shape{2, 1}, {"b", "z"})), Shape{2, 5}, {0, 0, 1, 0, 0, 1, 0, 0, 0, 0});
  expect_floats(layer(Tensor::from_string("d")), Shape{5}, {0, 0, 0, 0, 1});
}

TEST(StringLookupTest, MultiHot) {
  StringLookup layer({.vocabulary = kStringVocab, .output_mode = OutputMode::kMultiHot});
  expect_floats(layer(string_docstring_data4()), Shape{2, 5}, {0, 1, 0, 1, 1, 1, 0, 1, 0, 1});
}

TEST(StringLookupTest, Count) {
  StringLookup layer({.vocabulary = kStringVocab, .output_mode = OutputMode::kCount});
  expect_floats(layer(string_docstring_data4()), Shape{2, 5}, {0, 1, 0, 1, 2, 2, 0, 1, 0, 1});
}

TEST(StringLookupTest, TfIdfGivesOovTheAverageWeight) {
  StringLookup layer({.output_mode = OutputMode::kTfIdf});
  layer.set_vocabulary(kStringVocab, {0.25f, 0.75f, 0.6f, 0.4f});
  expect_floats(layer(string_docstring_data4()), Shape{2, 5}, {0, 0.25f, 0, 0.6f, 0.8f, 1.0f, 0, 0.75f, 0, 0.4f});
  EXPECT_EQ(layer.idf_weights(), (std::vector<float>{0.5f, 0.25f, 0.75f, 0.6f, 0.4f}));
}

TEST(StringLookupTest, TfIdfWithTheOovTokensWeight) {
  StringLookup layer({.output_mode = OutputMode::kTfIdf});
  layer.set_vocabulary({"[UNK]", "a", "b", "c", "d"}, {0.9f, 0.25f, 0.75f, 0.6f, 0.4f});
  expect_floats(layer(string_docstring_data4()), Shape{2, 5}, {0, 0.25f, 0, 0.6f, 0.8f, 1.8f, 0, 0.75f, 0, 0.4f});
}

TEST(StringLookupTest, InverseLookup) {
  StringLookup layer({.vocabulary = kStringVocab, .invert = true});
  const Tensor out = layer(testing::ints(Shape{2, 3}, {1, 3, 4, 4, 0, 2}));
  EXPECT_EQ(out.dtype(), kString);
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(testing::string_values(out), (std::vector<std::string>{"a", "c", "d", "d", "[UNK]", "b"}));
}

TEST(StringLookupTest, ForwardAndInverseLookupPairs) {
  StringLookup layer({.vocabulary = kStringVocab});
  StringLookup inverse({.vocabulary = kStringVocab, .invert = true});
  EXPECT_EQ(testing::string_values(inverse(layer(string_docstring_data()))),
            (std::vector<std::string>{"a", "c", "d", "d", "[UNK]", "b"}));
}

TEST(StringLookupTest, MaskToken) {
  StringLookup layer({.mask_token = "", .vocabulary = kStringVocab});
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "a", "b", "c", "d"}));
  expect_ints(layer(Tensor::from_strings({"a", "", "z"})), Shape{3}, {2, 0, 1});
  // Outside int mode the mask token takes no index and is dropped.
  StringLookup counts({.mask_token = "", .vocabulary = kStringVocab, .output_mode = OutputMode::kCount});
  EXPECT_EQ(counts.vocabulary_size(), 5);
  expect_floats(counts(strings(Shape{1, 4}, {"a", "", "", "z"})), Shape{1, 5}, {1, 1, 0, 0, 0});
  // Inverted, index 0 is the mask token.
  StringLookup inverse({.mask_token = "<m>", .vocabulary = kStringVocab, .invert = true});
  EXPECT_EQ(testing::string_values(inverse(testing::ints(Shape{3}, {0, 1, 2}))),
            (std::vector<std::string>{"<m>", "[UNK]", "a"}));
}

TEST(StringLookupTest, SaltedOovBucketsUseSipHash) {
  StringLookup salted({.num_oov_indices = 3, .vocabulary = kStringVocab, .salt = text::SipHashKey{133, 137}});
  const Tensor oov = Tensor::from_strings({"A", "B", "C", "D", "E"});
  // Keras's Hashing docstring gives these buckets for salt [133, 137] and 3 bins.
  expect_ints(salted(oov), Shape{5}, {1, 2, 1, 0, 2});
}

TEST(StringLookupTest, AdaptFromADatasetWithMaxTokens) {
  // Counts: a 3, d 3, b 2, c 2, and "" (the mask) 3 — the mask token is never learned.
  const Tensor lines = strings(Shape{4, 3}, {"a", "b", "", "a", "c", "", "a", "b", "c", "d", "d", "d"});
  StringLookup layer({.max_tokens = 4, .mask_token = ""});
  layer.adapt(data::Dataset::from_tensor_slices(lines).batch(3));
  // max_tokens counts the mask and OOV indices: 2 learned tokens; a and d tie, d is larger.
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "d", "a"}));
  // `steps` reads only the first batch (3 rows): a 3, b 2, c 2, and c beats b.
  StringLookup first({.max_tokens = 4, .mask_token = ""});
  first.adapt(data::Dataset::from_tensor_slices(lines).batch(3), 1);
  EXPECT_EQ(first.get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "a", "c"}));
}

TEST(StringLookupTest, AdaptLearnsInverseDocumentFrequencies) {
  // Two documents: a in both, b and c in one each.
  StringLookup layer({.output_mode = OutputMode::kTfIdf});
  layer.adapt(strings(Shape{2, 2}, {"a", "b", "a", "c"}));
  EXPECT_EQ(layer.get_vocabulary(), (std::vector<std::string>{"[UNK]", "a", "c", "b"}));
  const float a = std::log(1 + 2.f / 3), b = std::log(1 + 2.f / 2);
  const float oov = (a + b + b) / 3;
  const auto idf = layer.idf_weights();
  ASSERT_EQ(idf.size(), 4u);
  EXPECT_NEAR(idf[0], oov, 1e-6);
  EXPECT_NEAR(idf[1], a, 1e-6);
  EXPECT_NEAR(idf[2], b, 1e-6);
  EXPECT_NEAR(idf[3], b, 1e-6);
  expect_floats(layer(strings(Shape{1, 3}, {"a", "a", "z"})), Shape{1, 4}, {oov, 2 * a, 0, 0});
}

TEST(StringLookupTest, RaggedRows) {
  StringLookup layer({.vocabulary = kStringVocab});
  const RaggedTensor rows = RaggedTensor::from_row_lengths(Tensor::from_strings({"a", "z", "d", "b"}),
                                                           testing::ints(Shape{3}, {2, 0, 2}));
  const RaggedTensor out = RaggedTensor::from_tree(layer(rows.to_tree()));
  EXPECT_EQ(out.row_splits().to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 2, 4}));
  EXPECT_EQ(out.values().to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 4, 2}));
  StringLookup counts({.vocabulary = kStringVocab, .output_mode = OutputMode::kCount});
  expect_floats(counts(rows.to_tree()).tensor(), Shape{3, 5}, {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1});
}

TEST(StringLookupTest, ConfigCarriesTheAdaptedVocabulary) {
  StringLookup layer({.mask_token = "", .name = "words"});
  layer.adapt(string_docstring_data());
  const nlohmann::json config = serialize_layer(layer);
  EXPECT_EQ(config["config"]["vocabulary"], nlohmann::json::parse(R"(["", "[UNK]", "d", "z", "c", "b", "a"])"));
  EXPECT_EQ(config["config"]["mask_token"], "");
  EXPECT_EQ(config["config"]["oov_token"], "[UNK]");
  EXPECT_EQ(config["config"]["output_mode"], "int");
  const auto clone = std::dynamic_pointer_cast<StringLookup>(layer_from_config(config));
  ASSERT_NE(clone, nullptr);
  EXPECT_EQ(clone->get_vocabulary(), layer.get_vocabulary());
  expect_ints((*clone)(string_docstring_data()), Shape{2, 3}, {6, 4, 2, 2, 3, 5});
  clone->adapt(Tensor::from_strings({"q"}));  // an adapted layer stays adaptable after a round trip
  EXPECT_EQ(clone->get_vocabulary(), (std::vector<std::string>{"", "[UNK]", "q"}));
}

TEST(StringLookupTest, ConfigAcceptsKerasSpellings) {
  const auto layer = layer_from_config(nlohmann::json::parse(R"({"class_name": "StringLookup", "config": {
      "name": "s", "output_mode": "binary", "vocabulary": ["a", "b"], "salt": 7, "oov_token": "[UNK]",
      "mask_token": null, "max_tokens": null}})"));
  EXPECT_EQ(layer->get_config()["output_mode"], "multi_hot");
  EXPECT_EQ(layer->get_config()["salt"], nlohmann::json::parse("[7, 7]"));
  expect_floats((*layer)(strings(Shape{1, 2}, {"b", "x"})), Shape{1, 3}, {1, 0, 1});
}

TEST(StringLookupTest, WorksInDatasetMapOnWorkerThreads) {
  const auto layer = std::make_shared<StringLookup>(StringLookupOptions{.vocabulary = kStringVocab});
  std::vector<std::string> words;
  for (int i = 0; i < 400; ++i) words.push_back(std::string(1, static_cast<char>('a' + i % 6)));
  auto ds = data::Dataset::from_tensor_slices(Tensor::from_strings(words))
                .map([layer](const Tree& x) { return Tree((*layer)(x.tensor())); }, {.num_parallel_calls = 4})
                .batch(400);
  const Tensor out = ds.iterator().next()->tensor();
  const auto got = out.to_vector<int64_t>();
  for (int i = 0; i < 400; ++i) EXPECT_EQ(got[i], i % 6 < 4 ? i % 6 + 1 : 0) << i;
}

TEST(StringLookupTest, Errors) {
  EXPECT_THAT([] { StringLookup({.invert = true, .output_mode = OutputMode::kOneHot}); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "StringLookup: expected output_mode int when invert is true. Received: output_mode=one_hot")));
  EXPECT_THAT([] { StringLookup({.max_tokens = 1}); },
              ThrowsMessage<ValueError>(HasSubstr("StringLookup: expected max_tokens > 1 when it is set. Received: "
                                                  "max_tokens=1")));
  EXPECT_THAT([] { StringLookup({.num_oov_indices = -1}); },
              ThrowsMessage<ValueError>(HasSubstr("expected num_oov_indices >= 0. Received: num_oov_indices=-1")));
  EXPECT_THAT([] { StringLookup({.idf_weights = {1.f}}); },
              ThrowsMessage<ValueError>(HasSubstr("idf_weights are only used with output_mode tf_idf")));
  EXPECT_THAT([] { StringLookup({.vocabulary = kStringVocab, .output_mode = OutputMode::kTfIdf}); },
              ThrowsMessage<ValueError>(HasSubstr("with a vocabulary and output_mode tf_idf, idf_weights must be "
                                                  "given too")));
  EXPECT_THAT([] { StringLookup({.vocabulary = {"a", "b", "a", "c", "b"}, .name = "s"}); },
              ThrowsMessage<ValueError>(HasSubstr("s: the vocabulary repeats tokens (they must be unique): [b'a', "
                                                  "b'b']")));
  EXPECT_THAT([] { StringLookup({.mask_token = "", .vocabulary = {"a", ""}, .name = "s"}); },
              ThrowsMessage<ValueError>(HasSubstr("s: found the mask token b'' at vocabulary index 1")));
  EXPECT_THAT([] { StringLookup({.max_tokens = 3, .vocabulary = kStringVocab, .name = "s"}); },
              ThrowsMessage<ValueError>(HasSubstr("s: the vocabulary has 5 entries with the special tokens, more "
                                                  "than max_tokens=3")));
  EXPECT_THAT(
      [] { layer_from_config({{"class_name", "StringLookup"}, {"config", {{"output_mode", "dense"}}}}); },
      ThrowsMessage<ValueError>(HasSubstr("StringLookup: unknown output_mode 'dense'; expected one of int, one_hot, "
                                          "multi_hot, count, tf_idf")));
}

TEST(StringLookupTest, CallErrors) {
  StringLookup layer({.vocabulary = kStringVocab, .name = "words"});
  EXPECT_THAT([&] { layer(testing::ints(Shape{2}, {1, 2})); },
              ThrowsMessage<DTypeError>(HasSubstr("words: expected string inputs, got dtype int64")));
  StringLookup strict({.num_oov_indices = 0, .vocabulary = kStringVocab, .name = "strict"});
  EXPECT_THAT([&] { strict(Tensor::from_strings({"a", "z", "q"})); },
              ThrowsMessage<ValueError>(HasSubstr("strict: with num_oov_indices=0 every input must be in the "
                                                  "vocabulary; found OOV values [b'z', b'q']")));
  StringLookup unset({.output_mode = OutputMode::kMultiHot, .name = "unset"});
  EXPECT_THAT([&] { unset(Tensor::from_strings({"a"})); },
              ThrowsMessage<ValueError>(HasSubstr("unset: output_mode multi_hot needs a vocabulary before the layer "
                                                  "is called")));
  StringLookup called({.vocabulary = kStringVocab, .output_mode = OutputMode::kCount, .name = "called"});
  called(Tensor::from_strings({"a"}));
  EXPECT_THAT([&] { called.set_vocabulary({"x", "y"}); },
              ThrowsMessage<ValueError>(HasSubstr("called: with output_mode count and pad_to_max_tokens=false the "
                                                  "vocabulary size cannot change once the layer has been called")));
}

TEST(StringLookupTest, AdaptErrors) {
  StringLookup layer({.name = "words"});
  EXPECT_THAT([&] { layer.adapt(data::Dataset::from_tensor_slices(Tensor::from_strings({"a"})).take(0)); },
              ThrowsMessage<ValueError>(HasSubstr("words: adapt was given an empty dataset (no elements)")));
  EXPECT_THAT([&] { layer.adapt(Tensor::from_strings(std::vector<std::string>{})); },
              ThrowsMessage<ValueError>(HasSubstr("words: adapt was given an empty tensor of shape (0,)")));
  EXPECT_THAT([&] { layer.adapt(data::Dataset::from_tensor_slices(testing::ints(Shape{4}, {1, 2, 3, 4})).batch(2)); },
              ThrowsMessage<DTypeError>(HasSubstr("words: expected string data at element 0 of the dataset, got "
                                                  "dtype int64")));
  EXPECT_THAT([&] { layer.adapt(Tensor::from_strings({"[UNK]", "[UNK]"})); },
              ThrowsMessage<ValueError>(HasSubstr("words: adapt found no tokens to learn in a tensor of shape (2,)")));
  EXPECT_THAT([&] { layer.adapt(data::Dataset::from_tensor_slices(Tensor::from_strings({"a"})).repeat()); },
              ThrowsMessage<ValueError>(HasSubstr("words: adapt was given an infinitely repeating dataset; pass "
                                                  "`steps`")));
  StringLookup fixed({.vocabulary = kStringVocab, .name = "fixed"});
  EXPECT_THAT([&] { fixed.adapt(Tensor::from_strings({"a"})); },
              ThrowsMessage<ValueError>(HasSubstr("fixed: cannot adapt a layer that was given its vocabulary at "
                                                  "construction")));
}

}  // namespace
}  // namespace chorus::layers
