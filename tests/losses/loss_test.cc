// Loss::operator() (Keras's "sum_over_batch_size" reduction with sample weights) and the
// name/config factories.
#include "chorus/losses/loss.h"

#include <set>

#include "chorus/core/shared.h"
#include "chorus/losses/losses.h"
#include "chorus/ops/ops.h"
#include "tests/losses/loss_reference.h"
#include "tests/testing/registry_coverage.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using losses::Loss;
using namespace testing::test_names;

// Per-sample squared errors of (rows, d) tensors, in double.
std::vector<double> squared_errors(const Tensor& t, const Tensor& p) {
  return testing::per_row(t.to_vector<double>(), p.to_vector<double>(), p.dim(-1), true,
                          [](double a, double b) { return (a - b) * (a - b); });
}

TEST(LossTest, ReducesToTheMeanOverTheBatchAsAFloat32Scalar) {
  const Tensor t = random_tensor({7, 3}, 1), p = random_tensor({7, 3}, 2);
  const Tensor loss = losses::MeanSquaredError()(t, p);
  EXPECT_EQ(loss.rank(), 0);
  EXPECT_EQ(loss.dtype(), kFloat32);
  EXPECT_NEAR(loss.item<double>(), testing::mean_of(squared_errors(t, p)), 1e-6);
}

TEST(LossTest, PerSampleWeightsMultiplyAndTheBatchSizeDivides) {
  const Tensor t = random_tensor({5, 2}, 3), p = random_tensor({5, 2}, 4);
  const Tensor w = random_tensor({5}, 5, 0, 2);
  const auto l = squared_errors(t, p);
  const auto wv = w.to_vector<double>();
  double expected = 0;
  for (size_t i = 0; i < l.size(); ++i) expected += l[i] * wv[i];
  expected /= 5;  // sum_over_batch_size divides by the samples, not by sum(w)
  const losses::MeanSquaredError mse;
  EXPECT_NEAR(mse(t, p, w).item<double>(), expected, 1e-6);
  EXPECT_NEAR(mse(t, p, w.view({5, 1})).item<double>(), expected, 1e-6);  // (batch, 1) is squeezed
  EXPECT_NEAR(mse(t, p, ops::cast(w, kBFloat16)).item<double>(), expected, 1e-2);
}

TEST(LossTest, EveryLossWeighsItsPerSampleLosses) {
  // For each loss: operator() = sum(w * call()) / batch, and without w the plain mean.
  const Tensor probs = random_tensor({6, 4}, 20, 0.05, 1), logits = random_tensor({6, 4}, 21, -2, 2);
  const Tensor one_hot = ops::one_hot(from_values<int64_t>({0, 3, 1, 2, 2, 0}), 4);
  const Tensor sparse = from_values<int32_t>({0, 3, 1, 2, 2, 0});
  const Tensor w = random_tensor({6}, 22, 0, 2);
  struct Case {
    std::shared_ptr<Loss> loss;
    Tensor y_true, y_pred;
  };
  const std::vector<Case> cases = {
      {std::make_shared<losses::MeanSquaredError>(), probs, logits},
      {std::make_shared<losses::MeanAbsoluteError>(), probs, logits},
      {std::make_shared<losses::Huber>(losses::HuberOptions{.delta = 0.5}), probs, logits},
      {std::make_shared<losses::BinaryCrossentropy>(), one_hot, probs},
      {std::make_shared<losses::BinaryCrossentropy>(losses::BinaryCrossentropyOptions{.from_logits = true}), one_hot,
       logits},
      {std::make_shared<losses::CategoricalCrossentropy>(), one_hot, probs},
      {std::make_shared<losses::CategoricalCrossentropy>(
           losses::CategoricalCrossentropyOptions{.from_logits = true, .label_smoothing = 0.1}),
       one_hot, logits},
      {std::make_shared<losses::SparseCategoricalCrossentropy>(), sparse, probs},
      {std::make_shared<losses::SparseCategoricalCrossentropy>(
           losses::SparseCategoricalCrossentropyOptions{.from_logits = true}),
       sparse, logits},
  };
  const auto wv = w.to_vector<double>();
  for (const Case& c : cases) {
    const auto per = c.loss->call(c.y_true, c.y_pred).to_vector<double>();
    ASSERT_EQ(per.size(), 6u) << c.loss->name();
    double weighted = 0;
    for (size_t i = 0; i < per.size(); ++i) weighted += wv[i] * per[i];
    EXPECT_NEAR((*c.loss)(c.y_true, c.y_pred).item<double>(), testing::mean_of(per), 1e-5) << c.loss->name();
    EXPECT_NEAR((*c.loss)(c.y_true, c.y_pred, w).item<double>(), weighted / 6, 1e-5) << c.loss->name();
  }
}

TEST(LossTest, IntegerAndScalarWeights) {
  const Tensor t = random_tensor({4, 2}, 6), p = random_tensor({4, 2}, 7);
  const double unweighted = testing::mean_of(squared_errors(t, p));
  const losses::MeanSquaredError mse;
  EXPECT_NEAR(mse(t, p, scalar(3.0)).item<double>(), 3 * unweighted, 1e-6);
  const Tensor mask = from_values<int32_t>({1, 0, 1, 1});
  const auto l = squared_errors(t, p);
  EXPECT_NEAR(mse(t, p, mask).item<double>(), (l[0] + l[2] + l[3]) / 4, 1e-6);
}

TEST(LossTest, BatchWeightsWeighEachSampleOfSequenceLosses) {
  // Per-sample losses (2, 3) from logits (2, 3, 4): a (2,) weight scales each row, a
  // (2, 3) weight each element; both divide by the 6 loss elements.
  const Tensor logits = random_tensor({2, 3, 4}, 8, -2, 2);
  const Tensor labels = from_values<int64_t>({0, 3, 1, 2, 2, 0}, {2, 3});
  const losses::SparseCategoricalCrossentropy loss({.from_logits = true});
  const auto per = losses::sparse_categorical_crossentropy(labels, logits, true).to_vector<double>();
  const Tensor w = from_values({0.5f, 2.f});
  double expected = 0;
  for (size_t i = 0; i < 6; ++i) expected += per[i] * (i < 3 ? 0.5 : 2.0);
  EXPECT_NEAR(loss(labels, logits, w).item<double>(), expected / 6, 1e-5);
  const Tensor full = random_tensor({2, 3}, 9, 0, 1);
  const auto fv = full.to_vector<double>();
  expected = 0;
  for (size_t i = 0; i < 6; ++i) expected += per[i] * fv[i];
  EXPECT_NEAR(loss(labels, logits, full).item<double>(), expected / 6, 1e-5);
}

TEST(LossTest, AnEmptyBatchGivesZero) {
  const Tensor t = zeros({0, 3}), p = zeros({0, 3});
  EXPECT_EQ(losses::MeanSquaredError()(t, p).item<double>(), 0.0);
  EXPECT_EQ(losses::MeanSquaredError()(t, p, zeros({0})).item<double>(), 0.0);
}

TEST(LossTest, WeightedLossGradients) {
  const Tensor t = random_tensor({3, 4}, 10), w = random_tensor({3}, 11, 0.5, 2);
  expect_gradients_match([&](const std::vector<Tensor>& in) { return losses::MeanSquaredError()(t, in[0], w); },
                         {random_tensor({3, 4}, 12)});
  // Gradients reach the weights too (Keras does not stop them).
  expect_gradients_match([&](const std::vector<Tensor>& in) { return losses::MeanAbsoluteError()(t, in[0], in[1]); },
                         {random_tensor({3, 4}, 13), random_tensor({3}, 14, 0.5, 2)});
}

TEST(LossTest, Errors) {
  const losses::MeanSquaredError mse;
  const Tensor t = random_tensor({3, 2}, 15), p = random_tensor({3, 2}, 16);
  EXPECT_THAT([&] { mse(Tensor(), p); },
              ThrowsMessage<ValueError>(HasSubstr("mean_squared_error: y_true is an undefined tensor")));
  EXPECT_THAT([&] { mse(t, Tensor()); },
              ThrowsMessage<ValueError>(HasSubstr("mean_squared_error: y_pred is an undefined tensor")));
  EXPECT_THAT([&] { mse(t, p, ones({4})); },
              ThrowsMessage<ShapeError>(HasSubstr("mean_squared_error: sample_weight shape (4,) does not broadcast "
                                                  "to the per-sample losses' shape (3,)")));
  EXPECT_THAT([&] { losses::MeanSquaredError({.name = "my_mse"})(t, p, ones({3, 2})); },
              ThrowsMessage<ShapeError>(HasSubstr("my_mse: sample_weight shape (3, 2)")));
}

TEST(LossTest, FromNameKnowsKerasNames) {
  struct Case {
    const char* id;
    const char* class_name;
    const char* name;
  };
  const Case cases[] = {
      {"mse", "MeanSquaredError", "mse"},
      {"MSE", "MeanSquaredError", "MSE"},
      {"mean_squared_error", "MeanSquaredError", "mean_squared_error"},
      {"MeanSquaredError", "MeanSquaredError", "mean_squared_error"},
      {"mae", "MeanAbsoluteError", "mae"},
      {"MAE", "MeanAbsoluteError", "MAE"},
      {"mean_absolute_error", "MeanAbsoluteError", "mean_absolute_error"},
      {"MeanAbsoluteError", "MeanAbsoluteError", "mean_absolute_error"},
      {"huber", "Huber", "huber"},
      {"Huber", "Huber", "huber_loss"},
      {"bce", "BinaryCrossentropy", "bce"},
      {"BCE", "BinaryCrossentropy", "BCE"},
      {"binary_crossentropy", "BinaryCrossentropy", "binary_crossentropy"},
      {"BinaryCrossentropy", "BinaryCrossentropy", "binary_crossentropy"},
      {"categorical_crossentropy", "CategoricalCrossentropy", "categorical_crossentropy"},
      {"CategoricalCrossentropy", "CategoricalCrossentropy", "categorical_crossentropy"},
      {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy", "sparse_categorical_crossentropy"},
      {"SparseCategoricalCrossentropy", "SparseCategoricalCrossentropy", "sparse_categorical_crossentropy"},
  };
  for (const Case& c : cases) {
    const std::shared_ptr<Loss> loss = Loss::from_name(c.id);
    EXPECT_EQ(loss->to_config()["class_name"], c.class_name) << c.id;
    EXPECT_EQ(loss->name(), c.name) << c.id;
  }
  // Keras's defaults: probabilities, not logits.
  const auto scce = std::dynamic_pointer_cast<losses::SparseCategoricalCrossentropy>(
      Loss::from_name("sparse_categorical_crossentropy"));
  ASSERT_TRUE(scce);
  EXPECT_FALSE(scce->from_logits());
  EXPECT_THAT([] { Loss::from_name("mean_squared_errors"); },
              ThrowsMessage<ValueError>(
                  HasSubstr("Loss::from_name: unknown loss 'mean_squared_errors'; known names: mse, MSE")));
}

TEST(LossTest, SharedHandlesTakeLossesByValueOrName) {
  Shared<Loss> by_value = losses::SparseCategoricalCrossentropy({.from_logits = true});
  Shared<Loss> by_name = "mse";
  EXPECT_EQ(by_value->name(), "sparse_categorical_crossentropy");
  EXPECT_EQ(by_name->name(), "mse");
}

TEST(LossTest, ConfigsRoundTrip) {
  const std::vector<std::shared_ptr<Loss>> all = {
      std::make_shared<losses::MeanSquaredError>(losses::MeanSquaredErrorOptions{"a"}),
      std::make_shared<losses::MeanAbsoluteError>(),
      std::make_shared<losses::Huber>(losses::HuberOptions{.delta = 0.25, .name = "h"}),
      std::make_shared<losses::BinaryCrossentropy>(
          losses::BinaryCrossentropyOptions{.from_logits = true, .label_smoothing = 0.1, .axis = 0}),
      std::make_shared<losses::CategoricalCrossentropy>(
          losses::CategoricalCrossentropyOptions{.from_logits = true, .label_smoothing = 0.2, .name = "cce"}),
      std::make_shared<losses::SparseCategoricalCrossentropy>(
          losses::SparseCategoricalCrossentropyOptions{.from_logits = true}),
  };
  std::set<std::string> covered;
  for (const auto& loss : all) {
    const nlohmann::json config = loss->to_config();
    EXPECT_EQ(config["config"]["reduction"], "sum_over_batch_size");
    const std::shared_ptr<Loss> back = Loss::from_config(config);
    EXPECT_EQ(back->to_config(), config) << config.dump();
    EXPECT_EQ(back->name(), loss->name());
    covered.insert(config["class_name"].get<std::string>());
  }
  testing::expect_registry_covered(losses::registered_losses(), covered, {"UserScaledMse"});
  EXPECT_EQ(losses::Huber().get_config(),
            (nlohmann::json{{"name", "huber_loss"}, {"reduction", "sum_over_batch_size"}, {"delta", 1.0}}));
  // Keras's configs load (defaults fill missing keys; ignore_class null is accepted).
  const auto keras = Loss::from_config({{"class_name", "SparseCategoricalCrossentropy"},
                                        {"config",
                                         {{"name", "sparse_categorical_crossentropy"},
                                          {"reduction", "sum_over_batch_size"},
                                          {"from_logits", true},
                                          {"ignore_class", nullptr}}}});
  EXPECT_TRUE(std::dynamic_pointer_cast<losses::SparseCategoricalCrossentropy>(keras)->from_logits());
}

TEST(LossTest, FromConfigErrors) {
  EXPECT_THAT([] { Loss::from_config({{"class_name", "Poisson"}, {"config", nlohmann::json::object()}}); },
              ThrowsMessage<ValueError>(HasSubstr("Loss::from_config: unknown loss class 'Poisson'. Known classes: "
                                                  "BinaryCrossentropy, CategoricalCrossentropy, Huber")));
  EXPECT_THAT([] { Loss::from_config({{"config", nlohmann::json::object()}}); },
              ThrowsMessage<ValueError>(HasSubstr("Loss::from_config: config is missing 'class_name'")));
  EXPECT_THAT([] { Loss::from_config({{"class_name", "MeanSquaredError"}, {"config", {{"reduction", "avg"}}}}); },
              ThrowsMessage<ValueError>(HasSubstr("MeanSquaredError: unknown reduction 'avg'; expected one of "
                                                  "sum_over_batch_size, mean, sum, mean_with_sample_weight, none")));
  EXPECT_THAT([] { losses::MeanSquaredError({.name = "m", .reduction = "max"}); },
              ThrowsMessage<ValueError>(HasSubstr("m: unknown reduction 'max'")));
  EXPECT_THAT([] { Loss::from_config({{"class_name", "Huber"}, {"config", {{"delta", "big"}}}}); },
              ThrowsMessage<ValueError>(Eq("Huber: config key 'delta': expected a number, got \"big\" (a string)")));
  const nlohmann::json ignore = {{"class_name", "SparseCategoricalCrossentropy"}, {"config", {{"ignore_class", -1}}}};
  EXPECT_THAT([&] { Loss::from_config(ignore); },
              ThrowsMessage<ValueError>(HasSubstr("SparseCategoricalCrossentropy: ignore_class=-1 is not supported")));
}

// Configs are read strictly: a key no loss takes is an error naming the class and the key
// (with the likely intended one).
TEST(LossTest, FromConfigRejectsUnexpectedKeys) {
  const nlohmann::json typo = {{"class_name", "BinaryCrossentropy"}, {"config", {{"from_logit", true}}}};
  EXPECT_THAT([&] { Loss::from_config(typo); },
              ThrowsMessage<ValueError>(
                  Eq("BinaryCrossentropy: unexpected config key 'from_logit' (did you mean 'from_logits'?)")));
  const nlohmann::json wrong = {{"class_name", "CategoricalCrossentropy"}, {"config", {{"axis", 1.5}}}};
  EXPECT_THAT([&] { Loss::from_config(wrong); },
              ThrowsMessage<ValueError>(
                  Eq("CategoricalCrossentropy: config key 'axis': expected an integer, got 1.5 (a float)")));
  const nlohmann::json reduction = {{"class_name", "MeanSquaredError"}, {"config", {{"reduction", 3}}}};
  EXPECT_THAT([&] { Loss::from_config(reduction); },
              ThrowsMessage<ValueError>(
                  Eq("MeanSquaredError: config key 'reduction': expected a string, got 3 (an integer)")));
  // Keras 3 writes a loss's dtype; it is accepted.
  const auto keras = Loss::from_config(
      {{"class_name", "Huber"}, {"config", {{"name", "h"}, {"reduction", "sum"}, {"dtype", "float32"}, {"delta", 2.0}}}});
  EXPECT_EQ(keras->name(), "h");
}

// Keras 3's reductions on the same weighted losses: [1, 4, 9, 16] * [1, 0, 1, 0].
TEST(LossTest, ReductionsOfKeras3) {
  const Tensor y = tensor_of({0, 0, 0, 0}, {4, 1}), p = tensor_of({1, 2, 3, 4}, {4, 1});
  const Tensor w = tensor_of({1, 0, 1, 0}, {4});
  auto reduced = [&](const char* reduction, const Tensor& weight) {
    return losses::MeanSquaredError({.reduction = reduction})(y, p, weight);
  };
  EXPECT_FLOAT_EQ(reduced("sum_over_batch_size", w).item<float>(), 10.0f / 4);
  EXPECT_FLOAT_EQ(reduced("mean", w).item<float>(), 10.0f / 4);
  EXPECT_FLOAT_EQ(reduced("sum", w).item<float>(), 10.0f);
  EXPECT_FLOAT_EQ(reduced("mean_with_sample_weight", w).item<float>(), 10.0f / 2);
  EXPECT_FLOAT_EQ(reduced("mean_with_sample_weight", Tensor()).item<float>(), 30.0f / 4);
  EXPECT_FLOAT_EQ(reduced("mean_with_sample_weight", tensor_of({0, 0, 0, 0}, {4})).item<float>(), 0.0f);
  EXPECT_TRUE(testing::tensors_near(reduced("none", w), tensor_of({1, 0, 9, 0}, {4}), 0, 0));
  // A masked-LM loss: (batch, masks) losses and weights, averaged over the real masks.
  const Tensor logits = random_tensor(Shape{2, 3, 5}, 4);
  const Tensor labels = from_values<int32_t>(std::vector<int32_t>{1, 0, 4, 2, 2, 0}, Shape{2, 3});
  const Tensor mask = tensor_of({1, 1, 0, 1, 0, 0}, {2, 3});
  const losses::SparseCategoricalCrossentropy mlm({.from_logits = true, .reduction = "mean_with_sample_weight"});
  const auto per = losses::sparse_categorical_crossentropy(labels, logits, true).to_vector<double>();
  EXPECT_NEAR(mlm(labels, logits, mask).item<float>(), (per[0] + per[1] + per[3]) / 3, 1e-6);
  const nlohmann::json config = mlm.to_config();
  EXPECT_EQ(config["config"]["reduction"], "mean_with_sample_weight");
  EXPECT_EQ(Loss::from_config(config)->reduction(), "mean_with_sample_weight");
  EXPECT_EQ(Loss::from_config({{"class_name", "Huber"}, {"config", {{"reduction", nullptr}}}})->reduction(), "none");
  expect_gradients_match(
      [&](const std::vector<Tensor>& in) { return mlm(labels, in[0], mask); }, {random_tensor(Shape{2, 3, 5}, 9)});
}

}  // namespace
}  // namespace chorus
