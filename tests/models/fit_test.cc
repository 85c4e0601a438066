#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "chorus/chorus.h"
#include "tests/models/model_test_util.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::models {
namespace {

using namespace testing::test_names;

class FitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    layers::Layer::reset_names();
    layers::set_random_seed(7);
  }
};

TEST_F(FitTest, LowersTheLossOnASeparableProblem) {
  auto model = testing::small_mlp();
  model->compile({.optimizer = optimizers::Adam(0.01),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {"accuracy"}});
  auto data = testing::separable_blobs(512, 1);
  History history = model->fit(data.x, data.y, {.epochs = 20, .batch_size = 32, .verbose = 0});
  ASSERT_EQ(history.history.at("loss").size(), 20u);
  EXPECT_LT(history.history["loss"].back(), 0.5 * history.history["loss"].front());
  EXPECT_GT(history.history.at("accuracy").back(), 0.9);
  EXPECT_EQ(history.epoch, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
  Logs logs = model->evaluate(data.x, data.y, {.verbose = 0});
  EXPECT_GT(logs.at("accuracy"), 0.9);
}

TEST_F(FitTest, EpochLossIsTheExampleWeightedMeanOfBatchLosses) {
  // 10 examples in batches of 4, 4, 2: the epoch loss weights the last batch by 2.
  auto model = testing::small_mlp();
  model->compile({.optimizer = optimizers::SGD(0.0), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  auto data = testing::separable_blobs(10, 2);
  losses::SparseCategoricalCrossentropy loss({.from_logits = true});
  double expected = 0;
  for (auto [b, e] : {std::pair{0, 4}, {4, 8}, {8, 10}}) {
    Tensor logits = (*model)(data.x.first_axis_slice(b, e));
    expected += loss(data.y.first_axis_slice(b, e), logits).item<float>() * (e - b);
  }
  History h = model->fit(data.x, data.y, {.batch_size = 4, .verbose = 0, .shuffle = false});
  EXPECT_NEAR(h.history["loss"][0], expected / 10, 1e-6);
}

TEST_F(FitTest, ValidationFreqAndSplit) {
  auto model = testing::small_mlp();
  model->compile({.optimizer = "adam", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  auto data = testing::separable_blobs(100, 3);
  History h = model->fit(data.x, data.y, {.epochs = 6, .batch_size = 16, .verbose = 0, .validation_split = 0.2,
                                          .validation_freq = 3});
  EXPECT_EQ(h.history["loss"].size(), 6u);
  ASSERT_EQ(h.history["val_loss"].size(), 2u);  // after epochs 3 and 6
  // The held-out rows are the last 20, so evaluating them gives the last val_loss.
  Logs logs = model->evaluate(data.x.first_axis_slice(80, 100), data.y.first_axis_slice(80, 100), {.verbose = 0});
  EXPECT_NEAR(logs.at("loss"), h.history["val_loss"].back(), 1e-6);
}

TEST_F(FitTest, StepsPerEpochAndInitialEpoch) {
  auto model = testing::small_mlp();
  model->compile({.optimizer = "sgd", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  auto data = testing::separable_blobs(64, 4);
  auto ds = data::Dataset::from_tensor_slices(Tree::list({data.x, data.y})).batch(8).repeat();
  History h = model->fit(ds, {.epochs = 3, .verbose = 0, .initial_epoch = 1, .steps_per_epoch = 5});
  EXPECT_EQ(h.epoch, (std::vector<int>{1, 2}));
  EXPECT_EQ(model->optimizer().iterations(), 10);
  EXPECT_THAT([&] { model->fit(ds, {.verbose = 0}); }, ThrowsMessage<ValueError>(HasSubstr("give steps_per_epoch")));
}

TEST_F(FitTest, PredictReturnsOutputsInInputOrder) {
  auto model = testing::small_mlp();
  Tensor x = testing::random_tensor({10, 4}, 5);
  Tree out = model->predict(x, {.batch_size = 3});
  EXPECT_TRUE(testing::tensors_near(out.tensor(), (*model)(x), 1e-6, 1e-6));
}

// The retrieval model of DESIGN.md §1, written by subclassing.
class TwoTower : public Model {
 public:
  TwoTower(int64_t users, int64_t items)
      : user_(add<layers::Embedding>(users, 4)), item_(add<layers::Embedding>(items, 4)) {}
  Tree call(const Tree& x, bool /*training*/) override { return Tree{{"user_embeddings", (*user_)(x.tensor())}}; }
  Tensor compute_loss(const Tree&, const Tree& y, const Tree& y_pred, const Tensor&) override {
    Tensor scores = ops::sum(y_pred["user_embeddings"].tensor() * (*item_)(y["movie_id"].tensor()), 1, true);
    return losses::MeanSquaredError()(ops::expand_dims(y["rating"].tensor(), -1), scores);
  }

 private:
  layers::Embedding* user_;
  layers::Embedding* item_;
};

TEST_F(FitTest, SubclassedModelWithCustomLossTrains) {
  TwoTower model(10, 12);
  model.compile({.optimizer = optimizers::Adagrad(0.5)});
  const int n = 64;
  Tensor users = Tensor::empty({n}, kInt32), items = Tensor::empty({n}, kInt32), ratings = Tensor::empty({n});
  for (int i = 0; i < n; ++i) {
    users.data<int32_t>()[i] = i % 10;
    items.data<int32_t>()[i] = (i * 7) % 12;
    ratings.data<float>()[i] = static_cast<float>((i % 10 + (i * 7) % 12) % 5) / 5.0f;
  }
  auto ds = data::Dataset::from_tensor_slices(Tree::list({users, Tree{{"movie_id", items}, {"rating", ratings}}})).batch(16);
  History h = model.fit(ds, {.epochs = 30, .verbose = 0});
  EXPECT_LT(h.history["loss"].back(), 0.5 * h.history["loss"].front());
  EXPECT_EQ(model.weights()[0].path(), "embedding/embeddings");
}

TEST_F(FitTest, BadInputGetsClearErrors) {
  auto model = testing::small_mlp();
  auto data = testing::separable_blobs(10, 6);
  EXPECT_THAT([&] { model->fit(data.x, data.y, {.verbose = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("functional: call compile() before fit()")));
  model->compile({.optimizer = "adam", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  EXPECT_THAT([&] { model->fit(data.x, data.y.first_axis_slice(0, 9), {.verbose = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("x and y have different numbers of rows: 10 and 9")));
  EXPECT_THAT([&] { model->fit(testing::random_tensor({10, 5}, 1), data.y, {.verbose = 0}); },
              ThrowsMessage<ValueError>(HasSubstr("expected shape=(None, 4) float32, found shape=(10, 5)")));
  Tensor bad_labels = data.y.clone();
  bad_labels.data<int32_t>()[3] = 12;
  EXPECT_THAT([&] { model->fit(data.x, bad_labels, {.batch_size = 10, .verbose = 0}); },
              ThrowsMessage<IndexError>(HasSubstr("label 12 out of range [0, 3)")));
  EXPECT_THAT([&] { model->compile({.optimizer = "adamm"}); }, ThrowsMessage<ValueError>(HasSubstr("adamm")));
  EXPECT_THAT([&] { model->compile({.optimizer = "adam", .loss = "mse", .metrics = {"acuracy"}}); },
              ThrowsMessage<ValueError>(HasSubstr("acuracy")));
}

// Records the ValueErrors of fit_state() and resume_fit() called where they are refused,
// and, after a fit it starts inside epoch 0's end, the outer fit's state.
struct FitStateProbe : Callback {
  Tensor x, y;
  std::vector<std::string> errors;
  std::optional<FitState> after_inner_fit;

  void on_epoch_begin(int /*epoch*/, const Logs& /*logs*/) override {
    record([&] { fit().resume_fit(FitState{}); });
  }
  void on_test_begin(const Logs& /*logs*/) override {
    record([&] { fit().fit_state(); });
  }
  void on_epoch_end(int epoch, const Logs& /*logs*/) override {
    if (epoch != 0 || after_inner_fit) return;
    model().fit(x, y, {.batch_size = 8, .verbose = 0, .shuffle = false});
    after_inner_fit = fit().fit_state();
  }
  void record(const std::function<void()>& call) {
    try {
      call();
    } catch (const ValueError& e) {
      errors.emplace_back(e.what());
    }
  }
};

TEST_F(FitTest, FitStateAndResumeFitAreForTheRunningFitsCallbacks) {
  auto model = testing::small_mlp();
  model->compile({.optimizer = "sgd", .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  auto data = testing::separable_blobs(16, 4);
  auto probe = std::make_shared<FitStateProbe>();
  EXPECT_THAT([&] { probe->fit(); },
              ThrowsMessage<ValueError>(HasSubstr("callback: fit_state() and resume_fit() are for a callback's hooks "
                                                  "while fit runs")));
  probe->x = data.x;
  probe->y = data.y;
  model->fit(data.x, data.y, {.epochs = 2, .batch_size = 8, .verbose = 0, .callbacks = {probe},
                              .validation_data = data::Dataset::from_tensor_slices(Tree::list({data.x, data.y})).batch(8),
                              .shuffle = false});
  // Twice each: epochs 0 and 1 begin, and validate.
  EXPECT_THAT(probe->errors, ::testing::ElementsAre(HasSubstr("resume_fit() is for a callback's on_train_begin"),
                                                    HasSubstr("fit_state() during validation"),
                                                    HasSubstr("resume_fit() is for a callback's on_train_begin"),
                                                    HasSubstr("fit_state() during validation")));
  // The fit started inside the outer one's epoch-0 end handed the outer fit back.
  ASSERT_TRUE(probe->after_inner_fit.has_value());
  EXPECT_EQ(probe->after_inner_fit->epoch, 1);
  EXPECT_EQ(probe->after_inner_fit->total_steps, 2);
  // After the fit its callbacks answer to no fit.
  EXPECT_THAT([&] { probe->fit(); }, ThrowsMessage<ValueError>(HasSubstr("functional: fit_state() and resume_fit()")));
}

TEST_F(FitTest, NonFiniteLossIsAnErrorUnlessTerminateOnNaN) {
  auto model = testing::small_mlp();
  model->compile({.optimizer = optimizers::SGD(1e30), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  auto data = testing::separable_blobs(64, 8);
  Tensor x = ops::multiply(data.x, scalar(1e30f));
  EXPECT_THAT([&] { model->fit(x, data.y, {.epochs = 3, .batch_size = 8, .verbose = 0}); },
              ThrowsMessage<Error>(HasSubstr("the loss became")));
  auto again = testing::small_mlp();
  again->compile({.optimizer = optimizers::SGD(1e30), .loss = losses::SparseCategoricalCrossentropy({.from_logits = true})});
  History h = again->fit(x, data.y, {.epochs = 3, .batch_size = 8, .verbose = 0, .callbacks = {callbacks::TerminateOnNaN()}});
  EXPECT_LE(h.epoch.size(), 1u);
}

}  // namespace
}  // namespace chorus::models
