#include "chorus/layers/masked_lm_head.h"

#include "chorus/autograd/tape.h"
#include "chorus/ops/ops.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::layers {
namespace {

using namespace testing::test_names;

Tensor head_positions(const std::vector<int32_t>& values, const Shape& shape) {
  return from_values<int32_t>(values, shape);
}

// KerasHub's MaskedLMHead written with plain ops: take_along_axis, Dense + GELU,
// LayerNorm, the tied table, the bias.
Tensor composed_head(const MaskedLMHead& head, const ReversibleEmbedding& table, const Tensor& x,
                     const std::vector<int32_t>& positions, int64_t masks) {
  const int64_t batch = x.dim(0), sequence = x.dim(1), hidden = x.dim(2);
  std::vector<int32_t> flat;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t m = 0; m < masks; ++m) flat.push_back(static_cast<int32_t>(b * sequence) + positions[b * masks + m]);
  }
  Tensor rows = ops::take(ops::reshape(x, {batch * sequence, hidden}), head_positions(flat, {batch * masks}), 0);
  const auto w = head.weights();  // output_bias, then intermediate kernel, bias, gamma, beta
  Tensor h = ops::gelu(ops::add(ops::matmul(rows, w[1].value()), w[2].value()), false);
  const Tensor mean = ops::mean(h, -1, true);
  const Tensor centered = ops::subtract(h, mean);
  const Tensor var = ops::mean(ops::multiply(centered, centered), -1, true);
  h = ops::add(ops::multiply(ops::divide(centered, ops::sqrt(ops::add(var, scalar(1e-5f)))), w[3].value()), w[4].value());
  Tensor logits = ops::add(ops::matmul(h, ops::transpose(table.embeddings().value())), head.output_bias().value());
  return ops::reshape(logits, {batch, masks, table.input_dim()});
}

TEST(MaskedLMHeadTest, MatchesTheComposedOpsAndNamesItsWeights) {
  ReversibleEmbedding table(11, 6, {.embeddings_initializer = "glorot_uniform", .name = "token_embedding"});
  table.build_from(zeros({1}, kInt32));
  MaskedLMHead head(11, &table, {.intermediate_activation = "gelu", .bias_initializer = "ones", .name = "mlm_head"});
  const Tensor x = random_tensor(Shape{2, 5, 6}, 3);
  const std::vector<int32_t> positions = {4, 0, 2, 1, 1, 3};
  const Tensor logits = head(x, head_positions(positions, {2, 3}));
  ASSERT_EQ(logits.shape(), (Shape{2, 3, 11}));
  EXPECT_TRUE(tensors_near(logits, composed_head(head, table, x, positions, 3), 1e-5, 1e-5));
  std::vector<std::string> paths;
  for (const auto& w : head.weights()) paths.push_back(w.path());
  EXPECT_EQ(paths, (std::vector<std::string>{"mlm_head/output_bias", "mlm_head/intermediate_dense/kernel",
                                             "mlm_head/intermediate_dense/bias", "mlm_head/intermediate_layer_norm/gamma",
                                             "mlm_head/intermediate_layer_norm/beta"}));
  EXPECT_EQ(head.count_params(), 6 * 6 + 6 + 2 * 6 + 11);  // the tied table is the embedding's
}

TEST(MaskedLMHeadTest, GradientsReachTheHiddenStatesTheTableAndTheBias) {
  ReversibleEmbedding table(7, 4, {.embeddings_initializer = "glorot_uniform"});
  table.build_from(zeros({1}, kInt32));
  MaskedLMHead head(7, &table, {.intermediate_activation = "gelu"});
  const Tensor positions = head_positions({3, 3, 0, 2}, {2, 2});  // a position chosen twice adds up
  head.build_from(Tree{{"inputs", random_tensor(Shape{2, 4, 4}, 1)}, {"mask_positions", positions}});
  testing::expect_gradients_match(
      [&](const std::vector<Tensor>& in) { return head(in[0], positions); }, {random_tensor(Shape{2, 4, 4}, 5)});
  autograd::GradientTape tape;
  const Tensor y = head(random_tensor(Shape{2, 4, 4}, 6), positions);
  const auto grads = tape.gradient(ops::sum(ops::multiply(y, random_tensor(y.shape(), 2))),
                                   {table.embeddings().value(), head.output_bias().value()});
  EXPECT_GT(ops::max(ops::abs(grads[0])).item<float>(), 0.f);
  EXPECT_GT(ops::max(ops::abs(grads[1])).item<float>(), 0.f);
}

TEST(MaskedLMHeadTest, BadArgumentsAndPositionsGetClearErrors) {
  ReversibleEmbedding table(7, 4);
  table.build_from(zeros({1}, kInt32));
  EXPECT_THAT([&] { MaskedLMHead(8, &table, {.name = "h"}); },
              ThrowsMessage<ValueError>(HasSubstr("h: vocabulary_size=8 does not match the token_embedding")));
  EXPECT_THAT([] { MaskedLMHead(8, nullptr, {.name = "h"}); },
              ThrowsMessage<ValueError>(HasSubstr("h: expected a token_embedding")));
  MaskedLMHead head(7, &table, {.name = "mlm_head"});
  const Tensor x = random_tensor(Shape{2, 4, 4}, 1);
  EXPECT_THAT([&] { head(x, head_positions({0, 1, 4, 2}, {2, 2})); },
              ThrowsMessage<IndexError>(HasSubstr("mlm_head: mask_positions[1, 0] = 4 is outside the sequence [0, 4)")));
  EXPECT_THAT([&] { head(x, head_positions({0, 1, 2}, {3, 1})); },
              ThrowsMessage<ShapeError>(HasSubstr("mlm_head: expected inputs (batch, sequence, hidden) and "
                                                  "mask_positions (batch, masks) with the same batch, got (2, 4, 4) "
                                                  "and (3, 1)")));
  EXPECT_THAT([&] { head(x, random_tensor(Shape{2, 2}, 3)); },
              ThrowsMessage<DTypeError>(HasSubstr("mlm_head: expected integer mask_positions, got float32")));
  MaskedLMHead wide(7, &table, {.name = "wide"});
  EXPECT_THAT([&] { wide(random_tensor(Shape{1, 3, 5}, 2), head_positions({0}, {1, 1})); },
              ThrowsMessage<ShapeError>(HasSubstr("wide: the hidden size 5 of inputs (1, 3, 5) differs from the "
                                                  "token_embedding's output_dim 4")));
}

}  // namespace
}  // namespace chorus::layers
