#include "chorus/mixed_precision/dtype_policy.h"

#include "chorus/layers/dense.h"
#include "chorus/layers/embedding.h"
#include "chorus/layers/input_layer.h"
#include "chorus/layers/layer_normalization.h"
#include "chorus/layers/multi_head_attention.h"
#include "chorus/models/model.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::mixed_precision {
namespace {

using namespace testing::test_names;
using testing::GlobalPolicy;

// x rounded to bfloat16 and widened back: what a bfloat16 computation reads.
Tensor rounded(const Tensor& x) { return ops::cast(ops::cast(x, kBFloat16), kFloat32); }

TEST(DTypePolicyTest, NamesGiveKerasDtypes) {
  const DTypePolicy float32("float32"), mixed("mixed_bfloat16");
  EXPECT_EQ(float32.compute_dtype(), kFloat32);
  EXPECT_EQ(float32.variable_dtype(), kFloat32);
  EXPECT_FALSE(float32.is_mixed());
  EXPECT_EQ(mixed.compute_dtype(), kBFloat16);
  EXPECT_EQ(mixed.variable_dtype(), kFloat32);
  EXPECT_TRUE(mixed.is_mixed());
  EXPECT_EQ(global_policy(), DTypePolicy("float32"));
}

TEST(DTypePolicyTest, OtherKerasNamesAreRefusedWithTheSupportedOnes) {
  for (const char* name : {"mixed_float16", "bfloat16", "float64"}) {
    EXPECT_THAT([&] { DTypePolicy{name}; },
                ThrowsMessage<ValueError>(StrEq(fmt::format(
                    "DTypePolicy: unknown policy '{}'. chorus supports 'float32' and 'mixed_bfloat16' (float32 "
                    "weights; it has no float16, and keeps weights in float32)",
                    name))));
  }
  EXPECT_THROW(set_global_policy("mixed_float16"), ValueError);
  EXPECT_EQ(global_policy().name(), "float32");
}

TEST(DTypePolicyTest, LayersTakeTheGlobalPolicyWhenMadeAndSublayersTheirParents) {
  layers::Dense before(4);
  GlobalPolicy mixed("mixed_bfloat16");
  layers::Dense after(4);
  EXPECT_EQ(before.dtype_policy().name(), "float32");
  EXPECT_EQ(after.dtype_policy().name(), "mixed_bfloat16");
  EXPECT_EQ(after.compute_dtype(), kBFloat16);
  EXPECT_EQ(after.variable_dtype(), kFloat32);
  layers::MultiHeadAttention attention(2, 4);
  set_global_policy("float32");  // the sublayers attention builds follow it, not the global
  const Tensor x = random_tensor(Shape{2, 3, 8}, 1);
  EXPECT_EQ(attention(Tree::list({x, x})).tensor().dtype(), kBFloat16);
  for (const layers::Layer* sub : attention.layers()) EXPECT_EQ(sub->dtype_policy().name(), "mixed_bfloat16");
  for (const autograd::Variable& w : attention.weights()) EXPECT_EQ(w.dtype(), kFloat32) << w.path();
}

// Inputs and weights are read in bfloat16; the weights and their gradients stay float32.
TEST(MixedPrecisionTest, DenseComputesInBfloat16OnFloat32Weights) {
  GlobalPolicy mixed("mixed_bfloat16");
  layers::Dense dense(3, {.bias_initializer = layers::initializers::random_normal(0, 1, 5)});
  const Tensor x = random_tensor(Shape{4, 5}, 1);
  autograd::GradientTape tape;
  const Tensor y = dense(x);
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_EQ(dense.kernel().dtype(), kFloat32);
  const Tensor expected = ops::matmul(rounded(x), rounded(dense.kernel())) + rounded(dense.bias());
  EXPECT_TRUE(tensors_near(ops::cast(y, kFloat32), expected, 2e-2, 1e-2));
  const auto grads = tape.gradient(ops::sum(ops::cast(y, kFloat32)), {dense.kernel().value(), dense.bias().value()});
  ASSERT_EQ(grads[0].dtype(), kFloat32);
  // d sum(y) / d kernel[i][j] is the sum of column i of the (rounded) inputs.
  const Tensor column_sums = ops::sum(rounded(x), {0}, /*keepdims=*/true);
  EXPECT_TRUE(tensors_near(grads[0], ops::broadcast_to(ops::transpose(column_sums), Shape{5, 3}), 2e-2, 1e-2));
  EXPECT_TRUE(same_bits(grads[1], full(Shape{3}, 4.0)));
}

TEST(MixedPrecisionTest, LayerNormalizationComputesInFloat32AndReturnsTheInputsDtype) {
  layers::LayerNormalization float32_norm;
  GlobalPolicy mixed("mixed_bfloat16");
  layers::LayerNormalization mixed_norm;
  EXPECT_FALSE(mixed_norm.autocast());
  const Tensor x = random_tensor(Shape{3, 8}, 7, -2, 2, kBFloat16);
  const Tensor y = mixed_norm(x);
  EXPECT_EQ(y.dtype(), kBFloat16);
  EXPECT_TRUE(same_bits(y, float32_norm(x)));  // the same float32 arithmetic, rounded once
  EXPECT_EQ(mixed_norm(ops::cast(x, kFloat32)).dtype(), kFloat32);  // not cast down first
}

TEST(MixedPrecisionTest, EmbeddingCastsTheRowsItGathersAndItsGradientStaysFloat32) {
  GlobalPolicy mixed("mixed_bfloat16");
  layers::Embedding embedding(10, 4);
  const Tensor ids = from_values<int32_t>({1, 3, 1}, Shape{3});
  autograd::GradientTape tape;
  const Tensor rows = embedding(ids);
  EXPECT_EQ(rows.dtype(), kBFloat16);
  EXPECT_TRUE(same_bits(rows, ops::cast(ops::take(embedding.embeddings().value(), ids, 0), kBFloat16)));
  const Tensor grad = tape.gradient(ops::sum(ops::cast(rows, kFloat32)), {embedding.embeddings().value()})[0];
  ASSERT_EQ(grad.dtype(), kFloat32);
  std::vector<float> expected(40, 0.0f);
  for (int c = 0; c < 4; ++c) expected[4 + c] = 2, expected[12 + c] = 1;
  EXPECT_TRUE(same_bits(grad, from_values<float>(expected, Shape{10, 4})));
}

// A float32 layer in a mixed model (Keras's advice for the last layer) computes in float32
// on the bfloat16 activations it receives; the model takes its inputs as its specs say.
TEST(MixedPrecisionTest, AFloat32LayerInAMixedFunctionalModel) {
  GlobalPolicy mixed("mixed_bfloat16");
  const Tensor inputs = layers::Input({5});
  layers::Dense hidden(4, {.name = "hidden"});
  layers::Dense last(2, {.name = "last"});
  last.set_dtype_policy("float32");
  models::Model model(inputs, last(hidden(inputs)));
  const Tensor x = random_tensor(Shape{3, 5}, 2);
  EXPECT_EQ(hidden(x).dtype(), kBFloat16);
  const Tensor y = model(x);
  EXPECT_EQ(y.dtype(), kFloat32);
  EXPECT_TRUE(same_bits(y, ops::matmul(ops::cast(hidden(x), kFloat32), last.kernel()) + last.bias()));
  EXPECT_THAT([&] { last.set_dtype_policy("mixed_bfloat16"); },
              ThrowsMessage<ValueError>(StrEq("last: set_dtype_policy('mixed_bfloat16') after the layer was built "
                                              "(its policy is 'float32'); set it before the first call")));
}

TEST(MixedPrecisionTest, TheConfigCarriesThePolicy) {
  nlohmann::json config;
  {
    GlobalPolicy mixed("mixed_bfloat16");
    config = layers::Dense(3).get_config();
  }
  EXPECT_EQ(config["dtype"], "mixed_bfloat16");
  EXPECT_EQ(layers::Dense::from_config(config)->dtype_policy().name(), "mixed_bfloat16");
  config["dtype"] = "mixed_float16";
  EXPECT_THROW(layers::Dense::from_config(config), ValueError);
}

}  // namespace
}  // namespace chorus::mixed_precision
