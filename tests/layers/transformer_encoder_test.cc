#include "chorus/layers/transformer_encoder.h"

#include <cmath>

#include "chorus/autograd/tape.h"
#include "chorus/models/model.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"
#include "tests/testing/temp_dir.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

std::vector<testing::WeightSpec> encoder_weights(int64_t hidden, int64_t heads, int64_t intermediate) {
  const int64_t k = hidden / heads;
  return {{"self_attention_layer/query/kernel", Shape{hidden, heads, k}},
          {"self_attention_layer/query/bias", Shape{heads, k}},
          {"self_attention_layer/key/kernel", Shape{hidden, heads, k}},
          {"self_attention_layer/key/bias", Shape{heads, k}},
          {"self_attention_layer/value/kernel", Shape{hidden, heads, k}},
          {"self_attention_layer/value/bias", Shape{heads, k}},
          {"self_attention_layer/attention_output/kernel", Shape{heads, k, hidden}},
          {"self_attention_layer/attention_output/bias", Shape{hidden}},
          {"self_attention_layer_norm/gamma", Shape{hidden}},
          {"self_attention_layer_norm/beta", Shape{hidden}},
          {"feedforward_layer_norm/gamma", Shape{hidden}},
          {"feedforward_layer_norm/beta", Shape{hidden}},
          {"feedforward_intermediate_dense/kernel", Shape{hidden, intermediate}},
          {"feedforward_intermediate_dense/bias", Shape{intermediate}},
          {"feedforward_output_dense/kernel", Shape{intermediate, hidden}},
          {"feedforward_output_dense/bias", Shape{hidden}}};
}

TEST(TransformerEncoderTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<TransformerEncoder>(16, 2); },
      .inputs = random_tensor(Shape{2, 5, 8}, 1),
      .output_shapes = {Shape{2, 5, 8}},
      .weights = encoder_weights(8, 2, 16),
      .count_params = 4 * (64 + 8) + 4 * 8 + (8 * 16 + 16) + (16 * 8 + 8),
  });
  expect_layer_conforms({
      .make = [] {
        return std::make_shared<TransformerEncoder>(6, 4, TransformerEncoderOptions{.activation = "gelu", .normalize_first = true});
      },
      .inputs = Tree{{"inputs", random_tensor(Shape{3, 4, 8}, 2)},
                     {"padding_mask", from_values<int32_t>({1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 1}, Shape{3, 4})}},
      .output_shapes = {Shape{3, 4, 8}},
      .weights = encoder_weights(8, 4, 6),
      .count_params = 4 * (64 + 8) + 4 * 8 + (8 * 6 + 6) + (6 * 8 + 8),
  });
}

TEST(TransformerEncoderTest, ParamsMatchKerasHub) {
  // keras_hub.layers.TransformerEncoder(intermediate_dim=512, num_heads=2) on (None, 10, 128).
  TransformerEncoder encoder(512, 2);
  encoder.build_from(random_tensor(Shape{1, 10, 128}, 1));
  EXPECT_EQ(encoder.count_params(), 198272);
  EXPECT_EQ(encoder.weights()[0].path(), encoder.name() + "/self_attention_layer/query/kernel");
}

struct Sublayers {
  MultiHeadAttention attention;
  LayerNormalization attention_norm, feedforward_norm;
  Dense intermediate, output;
};

// The encoder written out with separate layers holding `encoder`'s weights.
Tensor composed(const TransformerEncoder& encoder, const Tensor& x, const Tensor& mask, bool normalize_first,
                const char* activation) {
  const int64_t hidden = x.dim(2), heads = encoder.num_heads();
  Sublayers s{MultiHeadAttention(heads, hidden / heads), LayerNormalization({.epsilon = 1e-5}),
              LayerNormalization({.epsilon = 1e-5}), Dense(encoder.intermediate_dim(), {.activation = activation}),
              Dense(hidden)};
  s.attention.build_from(Tree::list({x, x}));
  s.attention_norm.build_from(x);
  s.feedforward_norm.build_from(x);
  s.intermediate.build_from(x);
  s.output.build_from(Tensor::empty({1, 1, encoder.intermediate_dim()}));
  std::vector<Variable> mine;
  for (const Layer* l : std::initializer_list<const Layer*>{&s.attention, &s.attention_norm, &s.feedforward_norm,
                                                             &s.intermediate, &s.output}) {
    for (const auto& w : l->weights()) mine.push_back(w);
  }
  const auto theirs = encoder.weights();
  EXPECT_EQ(mine.size(), theirs.size());
  for (size_t i = 0; i < mine.size(); ++i) mine[i].assign(theirs[i].value());
  auto attend = [&](const Tensor& h) { return s.attention(h, h, {.attention_mask = mask}).tensor(); };
  if (!normalize_first) {
    const Tensor y = s.attention_norm(x + attend(x));
    return s.feedforward_norm(y + s.output(s.intermediate(y)));
  }
  const Tensor y = x + attend(s.attention_norm(x));
  return y + s.output(s.intermediate(s.feedforward_norm(y)));
}

TEST(TransformerEncoderTest, IsTheCompositionOfItsSublayers) {
  const Tensor x = random_tensor(Shape{2, 6, 8}, 3);
  const Tensor padding = from_values<int32_t>({1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1}, Shape{2, 6});
  for (bool normalize_first : {false, true}) {
    SCOPED_TRACE(normalize_first ? "pre-norm" : "post-norm");
    TransformerEncoder encoder(12, 2, {.activation = "gelu",
                                       .bias_initializer = initializers::random_uniform(-0.3, 0.3, 4),
                                       .normalize_first = normalize_first});
    const Tensor got = encoder(x, {.padding_mask = padding}).tensor();
    // padding (B, T) -> (B, 1, T): every query sees the same keys.
    const Tensor want = composed(encoder, x, ops::expand_dims(padding, 1), normalize_first, "gelu");
    EXPECT_TRUE(tensors_near(got, want, 1e-5, 1e-4));
  }
}

TEST(TransformerEncoderTest, PaddingCannotReachRealTokens) {
  TransformerEncoder encoder(16, 2);
  const Tensor x = random_tensor(Shape{1, 6, 8}, 5);
  const Tensor padding = from_values<int32_t>({1, 1, 1, 1, 0, 0}, Shape{1, 6});
  std::vector<float> xv = x.to_vector<float>();
  for (size_t i = 4 * 8; i < xv.size(); ++i) xv[i] = -xv[i] * 3;
  const Tensor a = encoder(x, {.padding_mask = padding}).tensor();
  const Tensor b = encoder(from_values(xv, x.shape()), {.padding_mask = padding}).tensor();
  EXPECT_TRUE(tensors_near(ops::slice(a, {0, 0, 0}, {1, 4, 8}), ops::slice(b, {0, 0, 0}, {1, 4, 8}), 1e-6, 1e-6));
  const Tree scored = encoder(x, {.padding_mask = padding, .return_attention_scores = true});
  EXPECT_TRUE(tensors_near(scored[0].tensor(), a, 0, 0));
  const auto p = scored[1].tensor().to_vector<float>();
  ASSERT_EQ(scored[1].tensor().shape(), Shape({1, 2, 6, 6}));
  for (size_t row = 0; row < 12; ++row) {
    EXPECT_EQ(p[row * 6 + 4], 0.f);
    EXPECT_EQ(p[row * 6 + 5], 0.f);
  }
  // An attention_mask merges with the padding mask by minimum.
  std::vector<int32_t> causal(36);
  for (int t = 0; t < 6; ++t) {
    for (int s = 0; s < 6; ++s) causal[t * 6 + s] = s <= t;
  }
  const Tensor causal_mask = from_values(causal, Shape{1, 6, 6});
  const Tensor both = encoder(x, {.padding_mask = padding, .attention_mask = causal_mask}).tensor();
  std::vector<int32_t> merged = causal;
  for (int t = 0; t < 6; ++t) merged[t * 6 + 4] = merged[t * 6 + 5] = 0;
  EXPECT_TRUE(tensors_near(both, encoder(x, {.attention_mask = from_values(merged, Shape{1, 6, 6})}).tensor(), 0, 0));
}

TEST(TransformerEncoderTest, EveryWeightGetsAGradientAndDropoutTrains) {
  TransformerEncoder encoder(16, 2, {.dropout = 0.2});
  const Tensor x = random_tensor(Shape{2, 5, 8}, 6);
  encoder.build_from(x);
  autograd::GradientTape tape;
  const Tensor y = encoder(x, {.training = true}).tensor();
  std::vector<Tensor> sources;
  for (const auto& w : encoder.weights()) sources.push_back(w.value());
  const auto grads = tape.gradient(ops::sum(y * random_tensor(y.shape(), 7)), sources);
  for (size_t i = 0; i < grads.size(); ++i) {
    ASSERT_TRUE(grads[i].defined()) << encoder.weights()[i].path();
    EXPECT_GT(ops::max(ops::abs(grads[i])).item<float>(), 0.f) << encoder.weights()[i].path();
  }
  EXPECT_FALSE(tensors_near(y, encoder(x), 1e-4, 0));  // dropout on when training only
  EXPECT_TRUE(tensors_near(encoder(x), encoder(x), 0, 0));
}

TEST(TransformerEncoderTest, BertInitializersStayWithinTwoSigma) {
  TransformerEncoder encoder(32, 2, {.kernel_initializer = initializers::truncated_normal(0, 0.02)});
  encoder.build_from(random_tensor(Shape{1, 4, 16}, 8));
  for (const auto& w : encoder.weights()) {
    if (w.name() != "kernel") continue;
    const auto v = w.value().to_vector<double>();
    double sum_sq = 0;
    for (double e : v) {
      EXPECT_LE(std::abs(e), 0.04) << w.path();
      sum_sq += e * e;
    }
    // A normal truncated at 2 sigma has stddev 0.88 sigma.
    EXPECT_NEAR(std::sqrt(sum_sq / static_cast<double>(v.size())), 0.0176, 0.004) << w.path();
  }
}

class TransformerEncoderSavingTest : public testing::TempDirTest {};

TEST_F(TransformerEncoderSavingTest, FunctionalModelWithAPaddingMaskSavesAndLoads) {
  Layer::reset_names();
  const Tensor tokens = Input({5, 8}), mask = Input({5}, kInt32);
  Tensor h = TransformerEncoder(16, 2, {.activation = "gelu"})(Tree{{"inputs", tokens}, {"padding_mask", mask}}).tensor();
  h = TransformerEncoder(16, 2, {.normalize_first = true})(Tree{{"inputs", h}, {"padding_mask", mask}}).tensor();
  models::Model model(Tree::list({tokens, mask}), h);
  ASSERT_EQ(model.weights().size(), 32u);
  EXPECT_EQ(model.weights()[16].path(), "transformer_encoder_1/self_attention_layer/query/kernel");
  const Tree batch = Tree::list(
      {random_tensor(Shape{2, 5, 8}, 9), from_values<int32_t>({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, Shape{2, 5})});
  const Tensor before = model(batch).tensor();
  model.save(dir_ / "model.keras");
  auto restored = models::load_model(dir_ / "model.keras");
  EXPECT_TRUE(tensors_near((*restored)(batch).tensor(), before, 0, 0));
}

TEST(TransformerEncoderTest, ConfigIsKerasHubShaped) {
  TransformerEncoder encoder(64, 4, {.dropout = 0.1, .activation = "gelu", .name = "encoder"});
  EXPECT_EQ(encoder.get_config(), nlohmann::json::parse(R"({
      "name": "encoder", "trainable": true, "dtype": "float32", "intermediate_dim": 64, "num_heads": 4, "dropout": 0.1,
      "activation": "gelu", "layer_norm_epsilon": 1e-05,
      "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
      "bias_initializer": {"class_name": "Zeros", "config": {}}, "normalize_first": false})"));
  const auto clone = TransformerEncoder::from_config(encoder.get_config());
  EXPECT_EQ(clone->get_config(), encoder.get_config());
}

TEST(TransformerEncoderTest, Errors) {
  EXPECT_THAT([] { TransformerEncoder bad(0, 2); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "TransformerEncoder: expected intermediate_dim > 0. Received: intermediate_dim=0")));
  EXPECT_THAT([] { TransformerEncoder bad(8, 0); },
              ThrowsMessage<ValueError>(HasSubstr("TransformerEncoder: expected num_heads > 0. Received: num_heads=0")));
  EXPECT_THAT([] { TransformerEncoder bad(8, 2, {.dropout = -0.1}); },
              ThrowsMessage<ValueError>(HasSubstr("expected dropout in [0, 1]")));
  TransformerEncoder three(16, 3, {.name = "encoder"});
  EXPECT_THAT([&] { three(random_tensor(Shape{2, 5, 8}, 1)); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "encoder: num_heads=3 does not divide the hidden_dim 8 of inputs (2, 5, 8): key_dim = hidden_dim / "
                  "num_heads must be a whole number")));
  EXPECT_THAT([&] { three(random_tensor(Shape{2, 5, 2}, 1)); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "encoder: attention key_dim computed cannot be zero: the hidden_dim 2 of inputs (2, 5, 2) has to be "
                  "equal to or greater than num_heads=3")));
  EXPECT_THAT([&] { three(random_tensor(Shape{2, 6}, 1)); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "encoder: expected inputs of shape (batch, sequence, hidden_dim), got (2, 6)")));
  EXPECT_FALSE(three.built());
  TransformerEncoder encoder(16, 2, {.name = "encoder"});
  const Tensor x = random_tensor(Shape{2, 5, 8}, 1);
  encoder(x);
  EXPECT_THAT([&] { encoder(x, {.padding_mask = zeros({2, 4}, kInt32)}); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "encoder: expected padding_mask of shape (batch, sequence) = (2, 5) for inputs (2, 5, 8), got (2, 4)")));
  EXPECT_THAT([&] { encoder(x, {.attention_mask = zeros({2, 5}, kInt32)}); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "encoder: expected attention_mask of shape (batch, sequence, sequence) = (2, 5, 5) for inputs "
                  "(2, 5, 8), got (2, 5)")));
  EXPECT_THAT([&] { encoder(random_tensor(Shape{2, 5, 6}, 1)); },
              ThrowsMessage<ShapeError>(HasSubstr("encoder: expected inputs of shape (batch, sequence, 8), got (2, 5, 6)")));
  EXPECT_THAT([&] { encoder(Tree{{"x", x}}); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "encoder: expected a tensor, or a dict with 'inputs' and optionally 'padding_mask' and "
                  "'attention_mask'")));
}

}  // namespace
}  // namespace chorus::layers
