// Classes of the user's registered by name (register_loss, register_metric,
// register_optimizer, register_schedule — Keras's register_keras_serializable): compile
// finds them by name, from_config rebuilds them, and load_model restores a model compiled
// with them; an unregistered one is an error naming it. Also Registry<T> itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "chorus/core/registry.h"
#include "tests/callbacks/callback_test_util.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"

namespace chorus {
namespace {

using namespace testing::test_names;

// scale * mean squared error.
class UserScaledMse : public losses::Loss {
 public:
  explicit UserScaledMse(double scale, std::string name = "user_scaled_mse")
      : Loss(std::move(name), "sum_over_batch_size"), scale_(scale) {}
  Tensor call(const Tensor& y_true, const Tensor& y_pred) const override {
    return ops::multiply(losses::mean_squared_error(y_true, y_pred), scalar(static_cast<float>(scale_)));
  }
  nlohmann::json get_config() const override { return {{"name", name()}, {"scale", scale_}}; }
  nlohmann::json to_config() const override { return {{"class_name", "UserScaledMse"}, {"config", get_config()}}; }
  double scale() const { return scale_; }

 private:
  double scale_;
};

// A class no test registers.
class UserNeverRegistered : public UserScaledMse {
 public:
  UserNeverRegistered() : UserScaledMse(1.0) {}
  nlohmann::json to_config() const override {
    return {{"class_name", "UserNeverRegistered"}, {"config", get_config()}};
  }
};

// The mean of the predictions.
class UserMeanPrediction : public metrics::Mean {
 public:
  explicit UserMeanPrediction(std::string name = "mean_prediction") : Mean({std::move(name)}) {}
  void update_state(const Tensor&, const Tensor& y_pred, const Tensor& sample_weight) override {
    Mean::update_state(y_pred, sample_weight);
  }
  std::unique_ptr<metrics::Metric> clone() const override { return std::make_unique<UserMeanPrediction>(*this); }
  nlohmann::json to_config() const override {
    return {{"class_name", "UserMeanPrediction"}, {"config", get_config()}};
  }
};

void register_user_classes() {
  losses::register_loss("UserScaledMse", [](const nlohmann::json& c) {
    return std::make_shared<UserScaledMse>(c.value("scale", 1.0), c.value("name", std::string("user_scaled_mse")));
  });
  metrics::register_metric("UserMeanPrediction", [](const nlohmann::json& c) {
    return std::make_shared<UserMeanPrediction>(c.value("name", std::string("mean_prediction")));
  });
}

class CustomObjectsTest : public chorus::testing::TempDirTest {};

TEST_F(CustomObjectsTest, AModelCompiledWithUserClassesLoadsOnceTheyAreRegistered) {
  Tensor x = layers::Input({3});
  auto model = std::make_unique<models::Model>(x, layers::Dense(1)(x));
  model->compile({.optimizer = "sgd",
                  .loss = std::make_shared<UserScaledMse>(2.5),
                  .metrics = {std::make_shared<UserMeanPrediction>()}});
  const auto data = chorus::testing::linear_data(32, 3);
  model->fit(data.x, data.y, {.epochs = 2, .batch_size = 8, .verbose = 0});
  const models::Logs before = model->evaluate(data.x, data.y, {.verbose = 0});
  model->save(dir_ / "model");
  register_user_classes();
  auto loaded = models::load_model(dir_ / "model");
  const models::Logs after = loaded->evaluate(data.x, data.y, {.verbose = 0});
  EXPECT_EQ(after.at("loss"), before.at("loss"));
  EXPECT_EQ(after.at("mean_prediction"), before.at("mean_prediction"));
  // The loss is the user's class with its configuration, not a look-alike.
  const auto* loss = dynamic_cast<const UserScaledMse*>(loaded->loss());
  ASSERT_NE(loss, nullptr);
  EXPECT_EQ(loss->scale(), 2.5);
}

TEST_F(CustomObjectsTest, AModelCompiledWithAnUnregisteredClassIsRefusedNamingIt) {
  Tensor x = layers::Input({3});
  auto model = std::make_unique<models::Model>(x, layers::Dense(1)(x));
  model->compile({.optimizer = "sgd", .loss = std::make_shared<UserNeverRegistered>()});
  model->save(dir_ / "model");
  EXPECT_THAT([&] { models::load_model(dir_ / "model"); },
              ThrowsMessage<ValueError>(HasSubstr("compile_config.loss: Loss::from_config: unknown loss class "
                                                  "'UserNeverRegistered'. Known classes: BinaryCrossentropy")));
}

TEST_F(CustomObjectsTest, CompileFindsRegisteredClassesByName) {
  register_user_classes();
  const auto loss = losses::Loss::from_name("UserScaledMse");
  ASSERT_NE(std::dynamic_pointer_cast<UserScaledMse>(loss), nullptr);
  EXPECT_EQ(std::dynamic_pointer_cast<UserScaledMse>(loss)->scale(), 1.0);  // its factory's default
  EXPECT_NE(std::dynamic_pointer_cast<UserMeanPrediction>(metrics::Metric::from_name("UserMeanPrediction")), nullptr);
  EXPECT_THAT([] { losses::Loss::from_name("UserPoisson"); },
              ThrowsMessage<ValueError>(HasSubstr("unknown loss 'UserPoisson'; known names: mse, ")));
  EXPECT_THAT([] { losses::Loss::from_name("UserPoisson"); }, ThrowsMessage<ValueError>(HasSubstr(", UserScaledMse")));
  EXPECT_THAT([] { metrics::Metric::from_name("UserAuc"); },
              ThrowsMessage<ValueError>(HasSubstr(", UserMeanPrediction")));
}

TEST_F(CustomObjectsTest, RegisteredOptimizersAndSchedulesAreRebuiltFromTheirConfigs) {
  optimizers::register_optimizer("UserAdam", [](const nlohmann::json& c) {
    return std::make_shared<optimizers::Adam>(optimizers::AdamOptions{.learning_rate = c.value("learning_rate", 0.5)});
  });
  optimizers::schedules::register_schedule("UserHalving", [](const nlohmann::json& c) {
    return std::make_shared<optimizers::schedules::ExponentialDecay>(c.at("initial").get<double>(), 10, 0.5, true);
  });
  const auto adam = std::dynamic_pointer_cast<optimizers::Adam>(optimizers::Optimizer::from_name("UserAdam"));
  ASSERT_NE(adam, nullptr);
  EXPECT_EQ(adam->learning_rate(), 0.5);
  EXPECT_NE(std::dynamic_pointer_cast<optimizers::Adam>(optimizers::Optimizer::from_config(
                {{"class_name", "UserAdam"}, {"config", {{"learning_rate", 0.25}}}})),
            nullptr);
  EXPECT_THAT([] { optimizers::Optimizer::from_name("adamax"); },
              ThrowsMessage<ValueError>(HasSubstr("expected one of sgd, adam, adamw, adagrad, rmsprop, UserAdam")));
  // A built-in optimizer whose learning rate is the user's schedule.
  const auto sgd = optimizers::Optimizer::from_config(
      {{"class_name", "SGD"},
       {"config", {{"learning_rate", {{"class_name", "UserHalving"}, {"config", {{"initial", 0.8}}}}}}}});
  EXPECT_DOUBLE_EQ(sgd->learning_rate(), 0.8);
}

TEST(RegistryTest, AddsReplacesListsSortedAndNamesWhatIsWrong) {
  Registry<int> registry("number", {{"two", [](const nlohmann::json&) { return std::make_shared<int>(2); }}});
  registry.add("register_number", "one", [](const nlohmann::json& c) { return std::make_shared<int>(c.value("v", 1)); });
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(*registry.make("make_number", "one", {{"v", 7}}), 7);
  registry.add("register_number", "two", [](const nlohmann::json&) { return std::make_shared<int>(22); });
  EXPECT_EQ(*registry.make("make_number", "two", {}), 22);
  EXPECT_THAT([&] { registry.make("make_number", "three", {}); },
              ThrowsMessage<ValueError>("make_number: unknown number class 'three'. Known classes: one, two"));
  EXPECT_THAT([&] { registry.add("register_number", "", [](const nlohmann::json&) { return std::make_shared<int>(0); }); },
              ThrowsMessage<ValueError>("register_number: expected a class name, got an empty string"));
  EXPECT_THAT([&] { registry.add("register_number", "four", nullptr); },
              ThrowsMessage<ValueError>("register_number: expected a factory for 'four', got an empty function"));
}

}  // namespace
}  // namespace chorus
