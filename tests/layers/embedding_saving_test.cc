// The KerasNLP embedding layers inside models: saved and loaded through the model saving
// code (config.json + safetensors), and trained with the tied reverse projection.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_util.h"

namespace chorus::layers {
namespace {

// A masked-LM head in miniature: embeds token ids with a tied ReversibleEmbedding and
// projects the embeddings straight back to vocabulary logits, calling reverse() inside
// call() as KerasHub's MaskedLMHead does. (batch, T) ids -> (batch, T, vocabulary) logits.
class TiedEmbeddingLogits : public Layer {
 public:
  TiedEmbeddingLogits(int64_t vocabulary, int64_t dim, std::string name = "")
      : Layer("TiedEmbeddingLogits", std::move(name)), vocabulary_(vocabulary), dim_(dim) {
    embedding_ =
        add<ReversibleEmbedding>(vocabulary, dim, ReversibleEmbeddingOptions{.name = this->name() + "/embedding"});
  }
  ReversibleEmbedding& embedding() const { return *embedding_; }
  nlohmann::json get_config() const override {
    nlohmann::json config = Layer::get_config();
    config["vocabulary"] = vocabulary_;
    config["dim"] = dim_;
    return config;
  }
  static std::shared_ptr<Layer> from_config(const nlohmann::json& config) {
    return std::make_shared<TiedEmbeddingLogits>(config.at("vocabulary").get<int64_t>(),
                                                 config.at("dim").get<int64_t>(), config.at("name").get<std::string>());
  }
  std::shared_ptr<Layer> move_to_heap() && override {
    return std::make_shared<TiedEmbeddingLogits>(std::move(*this));
  }

 protected:
  void build(const Tree& inputs) override { embedding_->build_from(inputs); }
  Tree call(const Tree& inputs, bool training) override {
    return embedding_->reverse((*embedding_)(inputs.tensor(), training));
  }

 private:
  int64_t vocabulary_, dim_;
  ReversibleEmbedding* embedding_;
};

class EmbeddingSavingTest : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    Layer::reset_names();
    set_random_seed(21);
  }
  // Saves `model`, loads it back and checks weights (paths, bits) and outputs on `x` (a
  // tensor, or a list for a model of several inputs; one output).
  void expect_round_trip(models::Model& model, const Tree& x) {
    model.save(dir_ / "model");
    const auto restored = models::load_model(dir_ / "model");
    const auto a = model.weights(), b = restored->weights();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].path(), b[i].path());
      EXPECT_TRUE(testing::same_bits(a[i].value(), b[i].value())) << a[i].path();
    }
    EXPECT_TRUE(testing::same_bits(model(x).tensor(), (*restored)(x).tensor()));
  }
};

TEST_F(EmbeddingSavingTest, TwoTokenAndPositionEmbeddingsInOneModelRoundTrip) {
  // An encoder-decoder's two embeddings: Keras 3 paths keep their weights apart.
  const Tensor source = Input(Shape{6}, kInt32), target = Input(Shape{4}, kInt32);
  const Tensor encoded = TokenAndPositionEmbedding(20, 6, 8, {.name = "encoder_embedding"})(source);
  const Tensor decoded =
      TokenAndPositionEmbedding(20, 4, 8, {.tie_weights = false, .name = "decoder_embedding"})(target);
  const Tensor logits = Dense(5)(Concatenate({.axis = 1})(Tree::list({encoded, decoded})).tensor());
  models::Model model(Tree::list({source, target}), logits);
  std::vector<std::string> paths;
  for (const Variable& v : model.weights()) paths.push_back(v.path());
  EXPECT_THAT(paths, ::testing::IsSupersetOf({"encoder_embedding/token_embedding/embeddings",
                                              "encoder_embedding/position_embedding/embeddings",
                                              "decoder_embedding/token_embedding/embeddings",
                                              "decoder_embedding/token_embedding/reverse_embeddings",
                                              "decoder_embedding/position_embedding/embeddings"}));
  const Tensor ids_a = from_values<int32_t>({1, 2, 3, 4, 5, 19, 0, 0, 7, 7, 7, 7}, Shape{2, 6});
  const Tensor ids_b = from_values<int32_t>({3, 1, 4, 1, 5, 9, 2, 6}, Shape{2, 4});
  expect_round_trip(model, Tree::list({ids_a, ids_b}));
}

TEST_F(EmbeddingSavingTest, PositionEmbeddingInAFunctionalModelRoundTrips) {
  const Tensor x = Input(Shape{5, 3});
  models::Model model(x, Add()(Tree::list({x, PositionEmbedding(8)(x)})));
  expect_round_trip(model, testing::random_tensor(Shape{2, 5, 3}, 4));
}

TEST_F(EmbeddingSavingTest, TiedReverseTrainsEveryRowAndRoundTrips) {
  register_layer("TiedEmbeddingLogits", TiedEmbeddingLogits::from_config);
  const Tensor ids = Input(Shape{3}, kInt32);
  TiedEmbeddingLogits head(7, 4, "head");
  models::Model model(ids, head(ids));
  model.compile({.optimizer = optimizers::Adam(0.05),
                 .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  // Ids 0..3 only: rows 4..6 are never looked up, so only the reverse use trains them.
  const Tensor batch = from_values<int32_t>({0, 1, 2, 3, 2, 1, 1, 0, 3, 2, 2, 0, 3, 3, 1, 0, 0, 1, 2, 3, 1, 2, 3, 0},
                                            Shape{8, 3});
  const auto before = head.embedding().embeddings().value().to_vector<float>();
  model.fit(batch, batch, {.epochs = 3, .batch_size = 4, .verbose = 0});
  const auto after = head.embedding().embeddings().value().to_vector<float>();
  for (size_t row = 0; row < 7; ++row) {
    bool changed = false;
    for (size_t c = 0; c < 4; ++c) changed = changed || before[row * 4 + c] != after[row * 4 + c];
    EXPECT_TRUE(changed) << "row " << row << " did not train";
  }
  expect_round_trip(model, batch);
}

}  // namespace
}  // namespace chorus::layers
