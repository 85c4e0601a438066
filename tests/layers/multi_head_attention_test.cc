#include "chorus/layers/multi_head_attention.h"

#include <cmath>

#include "chorus/autograd/tape.h"
#include "chorus/models/model.h"
#include "chorus/ops/ops.h"
#include "tests/layers/layer_conformance.h"
#include "tests/testing/temp_dir.h"

namespace chorus::layers {
namespace {

using namespace testing::layer_test_names;

// (B, T, D) @ kernel (D, N, H) + bias (N, H) -> heads (B, N, T, H), by plain ops.
Tensor project(const Tensor& x, const Tensor& kernel, const Tensor& bias) {
  const int64_t D = kernel.dim(0), N = kernel.dim(1), H = kernel.dim(2);
  Tensor y = ops::reshape(ops::matmul(x, ops::reshape(kernel, {D, N * H})), {x.dim(0), x.dim(1), N, H});
  if (bias.defined()) y = y + bias;
  return ops::transpose(y, {0, 2, 1, 3});
}

struct Composed {
  Tensor output, scores;
};

// Keras's MultiHeadAttention written out in separate ops on `mha`'s weights (the query
// prescaled, the mask applied with where(), softmax, then the output projection).
Composed composed(const MultiHeadAttention& mha, const Tensor& query, const Tensor& value, const Tensor& key,
                  const Tensor& mask = {}) {
  const auto w = mha.weights();
  const bool bias = w.size() == 8;
  auto at = [&](int i) { return w[static_cast<size_t>(i)].value(); };
  const int kernels[4] = {0, bias ? 2 : 1, bias ? 4 : 2, bias ? 6 : 3};
  auto b = [&](int i) { return bias ? at(kernels[i] + 1) : Tensor(); };
  const Tensor qh = project(query, at(kernels[0]), b(0)) * (1 / std::sqrt(double(mha.key_dim())));
  const Tensor kh = project(key, at(kernels[1]), b(1)), vh = project(value, at(kernels[2]), b(2));
  Tensor s = ops::matmul(qh, kh, {.transpose_b = true});
  if (mask.defined()) {
    const Tensor keep = ops::broadcast_to(ops::cast(ops::expand_dims(mask, 1), kBool), s.shape());
    s = ops::where(keep, s, full({}, -1e9));
  }
  const Tensor p = ops::softmax(s, -1);
  const Tensor o = ops::transpose(ops::matmul(p, vh), {0, 2, 1, 3});  // (B, T, N, Dv)
  const Tensor ok = at(kernels[3]);
  Tensor y = ops::matmul(ops::reshape(o, {o.dim(0), o.dim(1), o.dim(2) * o.dim(3)}),
                         ops::reshape(ok, {ok.dim(0) * ok.dim(1), ok.dim(2)}));
  if (bias) y = y + at(7);
  return {y, p};
}

TEST(MultiHeadAttentionTest, Conformance) {
  expect_layer_conforms({
      .make = [] { return std::make_shared<MultiHeadAttention>(2, 4); },
      .inputs = Tree::list({random_tensor(Shape{2, 5, 8}, 1), random_tensor(Shape{2, 6, 3}, 2)}),
      .output_shapes = {Shape{2, 5, 8}},
      .weights = {{"query/kernel", Shape{8, 2, 4}},
                  {"query/bias", Shape{2, 4}},
                  {"key/kernel", Shape{3, 2, 4}},
                  {"key/bias", Shape{2, 4}},
                  {"value/kernel", Shape{3, 2, 4}},
                  {"value/bias", Shape{2, 4}},
                  {"attention_output/kernel", Shape{2, 4, 8}},
                  {"attention_output/bias", Shape{8}}},
      .count_params = 64 + 8 + 2 * (24 + 8) + 64 + 8,
  });
  expect_layer_conforms({
      .make = [] {
        return std::make_shared<MultiHeadAttention>(
            3, 2, MultiHeadAttentionOptions{.value_dim = 5, .use_bias = false, .output_shape = {7}});
      },
      .inputs = Tree{{"query", random_tensor(Shape{2, 4, 6}, 3)},
                     {"value", random_tensor(Shape{2, 3, 6}, 4)},
                     {"key", random_tensor(Shape{2, 3, 2}, 5)},
                     {"attention_mask", ops::cast(random_tensor(Shape{2, 4, 3}, 6, 0, 2), kInt32)}},
      .output_shapes = {Shape{2, 4, 7}},
      .weights = {{"query/kernel", Shape{6, 3, 2}},
                  {"key/kernel", Shape{2, 3, 2}},
                  {"value/kernel", Shape{6, 3, 5}},
                  {"attention_output/kernel", Shape{3, 5, 7}}},
      .count_params = 36 + 12 + 90 + 105,
  });
}

TEST(MultiHeadAttentionTest, ParamsAndPathsMatchKeras) {
  // keras.layers.MultiHeadAttention(num_heads=2, key_dim=64) on (None, 128, 128): 66,048.
  MultiHeadAttention mha(2, 64, {.name = "mha"});
  mha.build_from(Tree::list({random_tensor(Shape{1, 128, 128}, 1), random_tensor(Shape{1, 128, 128}, 2)}));
  EXPECT_EQ(mha.count_params(), 66048);
  std::vector<std::string> paths;
  for (const auto& w : mha.weights()) paths.push_back(w.path());
  EXPECT_EQ(paths, (std::vector<std::string>{"mha/query/kernel", "mha/query/bias", "mha/key/kernel", "mha/key/bias",
                                             "mha/value/kernel", "mha/value/bias", "mha/attention_output/kernel",
                                             "mha/attention_output/bias"}));
}

TEST(MultiHeadAttentionTest, MatchesTheComposedOpsAndTheirGradients) {
  MultiHeadAttention mha(3, 4, {.value_dim = 5, .bias_initializer = initializers::random_uniform(-0.5, 0.5, 1)});
  const Tensor query = random_tensor(Shape{2, 7, 6}, 7), value = random_tensor(Shape{2, 9, 4}, 8),
               key = random_tensor(Shape{2, 9, 5}, 9);
  const Tensor mask = ops::cast(ops::greater(random_tensor(Shape{2, 7, 9}, 10), full({}, -0.4)), kInt32);
  mha.build_from(Tree{{"query", query}, {"value", value}, {"key", key}});
  const auto weights = mha.weights();
  std::vector<Tensor> sources;
  for (const auto& w : weights) sources.push_back(w.value());
  std::vector<Tensor> grads[2];
  Tree got;
  Composed want;
  {
    autograd::GradientTape tape;
    got = mha(query, value, {.key = key, .attention_mask = mask, .return_attention_scores = true});
    grads[0] = tape.gradient(ops::sum(got[0].tensor() * got[0].tensor()), sources);
  }
  {
    autograd::GradientTape tape;
    want = composed(mha, query, value, key, mask);
    grads[1] = tape.gradient(ops::sum(want.output * want.output), sources);
  }
  EXPECT_TRUE(tensors_near(got[0].tensor(), want.output, 1e-5, 1e-4));
  EXPECT_EQ(got[1].tensor().shape(), Shape({2, 3, 7, 9}));
  EXPECT_TRUE(tensors_near(got[1].tensor(), want.scores, 1e-6, 1e-4));
  for (size_t i = 0; i < sources.size(); ++i) {
    EXPECT_TRUE(tensors_near(grads[0][i], grads[1][i], 1e-5, 1e-3)) << weights[i].path();
  }
}

TEST(MultiHeadAttentionTest, MaskedKeysGetZeroProbability) {
  MultiHeadAttention mha(2, 4);
  const Tensor x = random_tensor(Shape{2, 5, 8}, 11);
  // Batch 0 may not attend to keys 3 and 4 (padding); batch 1 attends everywhere. A
  // float mask counts as attending wherever it is nonzero (Keras casts it to bool).
  std::vector<float> m(2 * 5 * 5, 1.f);
  for (int t = 0; t < 5; ++t) m[t * 5 + 3] = m[t * 5 + 4] = 0.f;
  m[25] = 0.25f;
  const Tree out = mha(x, x, {.attention_mask = from_values(m, Shape{2, 5, 5}), .return_attention_scores = true});
  const auto p = out[1].tensor().to_vector<float>();
  for (int n = 0; n < 2; ++n) {
    for (int t = 0; t < 5; ++t) {
      EXPECT_EQ(p[(n * 5 + t) * 5 + 3], 0.f);
      EXPECT_EQ(p[(n * 5 + t) * 5 + 4], 0.f);
      EXPECT_GT(p[((2 + n) * 5 + t) * 5 + 4], 0.f);
    }
    EXPECT_GT(p[((2 + n) * 5 + 0) * 5 + 0], 0.f);
  }
  // The padded positions' values cannot reach the output.
  std::vector<float> xv = x.to_vector<float>();
  for (int i = 3 * 8; i < 5 * 8; ++i) xv[i] += 5.f;
  const Tensor changed = from_values(xv, x.shape());
  const Tensor a = mha(x, x, {.attention_mask = from_values(m, Shape{2, 5, 5})}).tensor();
  const Tensor b = mha(changed, changed, {.attention_mask = from_values(m, Shape{2, 5, 5})}).tensor();
  EXPECT_TRUE(tensors_near(ops::slice(a, {0, 0, 0}, {1, 3, 8}), ops::slice(b, {0, 0, 0}, {1, 3, 8}), 1e-6, 1e-6));
  // A (T, S) mask broadcasts over the batch.
  const Tensor causal = from_values<float>({1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1},
                                           Shape{5, 5});
  const Tree c = mha(x, x, {.attention_mask = causal, .return_attention_scores = true});
  EXPECT_TRUE(tensors_near(c[0].tensor(), composed(mha, x, x, x, ops::broadcast_to(causal, Shape{2, 5, 5})).output,
                           1e-5, 1e-4));
}

// use_causal_mask equals passing Keras's (T, S) lower triangle, and combines with a
// padding mask by logical and; later positions cannot reach earlier outputs.
TEST(MultiHeadAttentionTest, CausalMaskIsTheLowerTriangleAndKeepsTheFutureOut) {
  MultiHeadAttention mha(2, 4);
  const Tensor x = random_tensor(Shape{2, 5, 8}, 21);
  const Tensor triangle = from_values<float>({1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1},
                                             Shape{5, 5});
  EXPECT_TRUE(tensors_near(mha(x, x, {.use_causal_mask = true}).tensor(),
                           mha(x, x, {.attention_mask = triangle}).tensor(), 0, 0));
  std::vector<float> padding(2 * 5 * 5, 1.f);
  for (int t = 0; t < 5; ++t) padding[t * 5 + 0] = 0.f;  // batch 0 may not attend to key 0
  const Tensor pad = from_values(padding, Shape{2, 5, 5});
  const auto both = mha(x, x, {.attention_mask = pad, .use_causal_mask = true, .return_attention_scores = true});
  const auto p = both[1].tensor().to_vector<float>();
  EXPECT_EQ(p[1 * 5 + 0], 0.f);   // batch 0, head 0, query 1: key 0 is padding
  EXPECT_EQ(p[1 * 5 + 2], 0.f);   // ... key 2 is in the future
  EXPECT_GT(p[1 * 5 + 1], 0.f);   // ... key 1 is neither
  std::vector<float> xv = x.to_vector<float>();
  for (int i = 3 * 8; i < 5 * 8; ++i) xv[i] += 5.f;  // change positions 3 and 4 of batch 0
  const Tensor a = mha(x, x, {.use_causal_mask = true}).tensor();
  const Tensor b = mha(from_values(xv, x.shape()), from_values(xv, x.shape()), {.use_causal_mask = true}).tensor();
  EXPECT_TRUE(tensors_near(ops::slice(a, {0, 0, 0}, {1, 3, 8}), ops::slice(b, {0, 0, 0}, {1, 3, 8}), 1e-6, 1e-6));
  EXPECT_THAT([&] { mha(Input({5, 8}), Input({5, 8}), {.use_causal_mask = true}); },
              ThrowsMessage<ValueError>(HasSubstr("use_causal_mask is not supported on symbolic inputs")));
}

TEST(MultiHeadAttentionTest, DropoutAppliesToTheProbabilitiesWhenTraining) {
  MultiHeadAttention a(2, 4, {.dropout = 0.5, .seed = 3}), b(2, 4, {.dropout = 0.5, .seed = 3});
  const Tensor x = random_tensor(Shape{2, 6, 8}, 12);
  const Tree inference = a(x, x, {.return_attention_scores = true});
  const Tree training = a(x, x, {.return_attention_scores = true, .training = true});
  EXPECT_FALSE(tensors_near(training[0].tensor(), inference[0].tensor(), 1e-3, 0));
  // The scores are reported before dropout, as Keras does.
  EXPECT_TRUE(tensors_near(training[1].tensor(), inference[1].tensor(), 0, 0));
  // Same seed and weights, same masks.
  b.build_from(Tree::list({x, x}));
  for (size_t i = 0; i < a.weights().size(); ++i) b.weights()[i].assign(a.weights()[i].value());
  b(x, x);  // inference draws no mask
  EXPECT_TRUE(tensors_near(b(x, x, {.training = true}).tensor(), training[0].tensor(), 0, 0));
  // Without training, dropout is off.
  EXPECT_TRUE(tensors_near(a(x, x).tensor(), inference[0].tensor(), 0, 0));
}

// Copies `from`'s weights into `to` (same shapes, same order).
void copy_weights(const Layer& from, const Layer& to) {
  const auto a = from.weights(), b = to.weights();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) b[i].assign(a[i].value());
}

TEST(MultiHeadAttentionTest, AttendsOverSeveralAxes) {
  const int64_t B = 2, X = 3, Y = 4, D = 6;
  const Tensor q = random_tensor(Shape{B, X, Y, D}, 13), v = random_tensor(Shape{B, X, Y, D}, 14);
  MultiHeadAttention flat(2, 3);
  flat.build_from(Tree::list({ops::reshape(q, {B, X * Y, D}), ops::reshape(v, {B, X * Y, D})}));
  // Default axes (1, 2): one softmax over both, i.e. attention over the flattened grid.
  MultiHeadAttention both(2, 3);
  both.build_from(Tree::list({q, v}));
  copy_weights(flat, both);
  const Tree got = both(q, v, {.return_attention_scores = true});
  const Tree want = flat(ops::reshape(q, {B, X * Y, D}), ops::reshape(v, {B, X * Y, D}), {.return_attention_scores = true});
  EXPECT_TRUE(tensors_near(got[0].tensor(), ops::reshape(want[0].tensor(), {B, X, Y, D}), 1e-5, 1e-4));
  EXPECT_EQ(got[1].tensor().shape(), Shape({B, 2, X, Y, X, Y}));
  EXPECT_TRUE(tensors_near(got[1].tensor(), ops::reshape(want[1].tensor(), {B, 2, X, Y, X, Y}), 1e-6, 1e-4));
  // attention_axes {2}: each row x attends within itself, like a batch of B * X sequences.
  MultiHeadAttention rows(2, 3, {.attention_axes = {2}});
  rows.build_from(Tree::list({q, v}));
  copy_weights(flat, rows);
  std::vector<float> m(static_cast<size_t>(B * X * Y * Y));
  for (size_t i = 0; i < m.size(); ++i) m[i] = (i * 7) % 5 == 0 ? 0.f : 1.f;
  const Tensor mask = from_values(m, Shape{B, X, Y, Y});
  const Tree r = rows(q, v, {.attention_mask = mask, .return_attention_scores = true});
  const Tree per_row = flat(ops::reshape(q, {B * X, Y, D}), ops::reshape(v, {B * X, Y, D}),
                            {.attention_mask = ops::reshape(mask, {B * X, Y, Y}), .return_attention_scores = true});
  EXPECT_TRUE(tensors_near(r[0].tensor(), ops::reshape(per_row[0].tensor(), {B, X, Y, D}), 1e-5, 1e-4));
  EXPECT_EQ(r[1].tensor().shape(), Shape({B, X, 2, Y, Y}));
  EXPECT_TRUE(tensors_near(r[1].tensor(), ops::reshape(per_row[1].tensor(), {B, X, 2, Y, Y}), 1e-6, 1e-4));
}

class MultiHeadAttentionSavingTest : public testing::TempDirTest {};

TEST_F(MultiHeadAttentionSavingTest, FunctionalModelSavesAndLoads) {
  Layer::reset_names();
  const Tensor q_in = Input({5, 8}), v_in = Input({6, 4});
  const Tree y = MultiHeadAttention(2, 4, {.dropout = 0.1, .name = "mha"})(Tree::list({q_in, v_in}));
  // A second attention layer: its weights' paths differ from the first's.
  const Tree z = MultiHeadAttention(2, 4, {.name = "mha_2"})(Tree::list({y.tensor(), y.tensor()}));
  models::Model model(Tree::list({q_in, v_in}), z);
  EXPECT_EQ(model.weights().size(), 16u);
  EXPECT_EQ(model.weights()[8].path(), "mha_2/query/kernel");
  const Tree batch = Tree::list({random_tensor(Shape{3, 5, 8}, 15), random_tensor(Shape{3, 6, 4}, 16)});
  const Tensor before = model(batch).tensor();
  model.save(dir_ / "model.keras");
  auto restored = models::load_model(dir_ / "model.keras");
  EXPECT_TRUE(tensors_near((*restored)(batch).tensor(), before, 0, 0));
  const Layer* first = nullptr;
  for (const Layer* l : restored->layers()) {
    if (l->name() == "mha") first = l;
  }
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->get_config()["dropout"], 0.1);
  EXPECT_EQ(first->get_config()["key_dim"], 4);
}

TEST(MultiHeadAttentionTest, ConfigIsKerasShaped) {
  MultiHeadAttention mha(4, 16, {.dropout = 0.1, .name = "attention"});
  EXPECT_EQ(mha.get_config(), nlohmann::json::parse(R"({
      "name": "attention", "trainable": true, "dtype": "float32", "num_heads": 4, "key_dim": 16, "value_dim": 16, "dropout": 0.1,
      "use_bias": true, "output_shape": null, "attention_axes": null,
      "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
      "bias_initializer": {"class_name": "Zeros", "config": {}}, "seed": null})"));
  // As Keras writes it (unset regularizers accepted; ints for output_shape and attention_axes).
  const auto from_keras = MultiHeadAttention::from_config(nlohmann::json::parse(R"({
      "name": "mha", "num_heads": 2, "key_dim": 8, "value_dim": null, "output_shape": 10, "attention_axes": 1,
      "use_gate": false, "kernel_regularizer": null})"));
  EXPECT_EQ(from_keras->value_dim(), 8);
  EXPECT_EQ(from_keras->get_config()["output_shape"], nlohmann::json::parse("[10]"));
  EXPECT_EQ(from_keras->get_config()["attention_axes"], nlohmann::json::parse("[1]"));
}

TEST(MultiHeadAttentionTest, Errors) {
  EXPECT_THAT([] { MultiHeadAttention bad(0, 4); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "MultiHeadAttention: expected a positive integer for num_heads. Received: num_heads=0")));
  EXPECT_THAT([] { MultiHeadAttention bad(2, 0); },
              ThrowsMessage<ValueError>(HasSubstr("expected a positive integer for key_dim. Received: key_dim=0")));
  EXPECT_THAT([] { MultiHeadAttention bad(2, 4, {.dropout = 1.5}); },
              ThrowsMessage<ValueError>(HasSubstr("expected dropout in [0, 1]. Received: dropout=1.5")));
  EXPECT_THAT([] { MultiHeadAttention bad(2, 4, {.output_shape = {0}}); },
              ThrowsMessage<ValueError>(HasSubstr("expected output_shape dims > 0. Received: output_shape=(0,)")));
  MultiHeadAttention mha(2, 4, {.name = "mha"});
  const Tensor q = random_tensor(Shape{2, 5, 8}, 1), v = random_tensor(Shape{2, 6, 8}, 2);
  EXPECT_THAT([&] { mha(q, v, {.key = random_tensor(Shape{2, 7, 8}, 3)}); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "mha: all dimensions of value and key, except the last one, must be equal. Received: "
                  "value_shape=(2, 6, 8) and key_shape=(2, 7, 8)")));
  EXPECT_THAT([&] { mha(random_tensor(Shape{2, 8}, 1), v); },
              ThrowsMessage<ShapeError>(HasSubstr("mha: expected query, value and key of rank >= 3")));
  EXPECT_THAT([&] { mha(Tree::list({q})); },
              ThrowsMessage<ValueError>(HasSubstr("mha: expected [query, value], [query, value, key] or a dict")));
  EXPECT_THAT([&] { mha(Tree{{"query", q}, {"values", v}}); },
              ThrowsMessage<ValueError>(HasSubstr("mha: expected [query, value]")));
  mha(q, v);
  EXPECT_THAT([&] { mha(q, random_tensor(Shape{3, 6, 8}, 4)); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "mha: query (2, 5, 8), value (3, 6, 8) and key (3, 6, 8) must agree on the batch")));
  EXPECT_THAT([&] { mha(q, v, {.attention_mask = zeros({2, 6, 5})}); },
              ThrowsMessage<ShapeError>(HasSubstr(
                  "mha: attention_mask of shape (2, 6, 5) does not broadcast to the attention scores (2, 2, 5, 6)")));
  EXPECT_THAT([&] { mha(q, v, {.attention_mask = zeros({1, 2, 2, 5, 6})}); },
              ThrowsMessage<ShapeError>(HasSubstr("mha: attention_mask of shape (1, 2, 2, 5, 6) does not broadcast")));
  EXPECT_THAT([&] { mha(q, random_tensor(Shape{2, 6, 9}, 5)); },
              ThrowsMessage<ValueError>(HasSubstr("Input 0 of layer \"key\" is incompatible with the layer: expected "
                                                  "axis -1 of input shape to have value 8, but received input with "
                                                  "shape (2, 6, 9)")));
  MultiHeadAttention axes(2, 4, {.attention_axes = {2}, .name = "axes"});
  EXPECT_THAT([&] { axes(q, v); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "axes: attention_axes must be query axes in [1, 1] (neither the batch nor the feature axis). "
                  "Received: attention_axes=[2] for a query of rank 3")));
  const Tensor sq = Input({5, 8}), sv = Input({6, 8});
  EXPECT_THAT([&] { mha(sq, sv, {.return_attention_scores = true}); },
              ThrowsMessage<ValueError>(HasSubstr("mha: return_attention_scores is not supported on symbolic inputs")));
}

}  // namespace
}  // namespace chorus::layers
