// Metric's contract over every metric: merging two instances equals one instance fed
// both batches, reset, clone, from_name for every Keras name, and config round trips.
#include "chorus/metrics/metric.h"

#include <functional>
#include <set>

#include "chorus/core/creation.h"
#include "chorus/core/shared.h"
#include "chorus/metrics/metrics.h"
#include "chorus/ops/ops.h"
#include "tests/testing/registry_coverage.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus {
namespace {

using metrics::Metric;
using namespace testing::test_names;

struct Batch {
  Tensor y_true, y_pred, sample_weight;
};

// Two different batches suited to the metric named `id`.
std::vector<Batch> batches_for(const std::string& id) {
  std::vector<Batch> out;
  for (uint64_t seed : {1, 2}) {
    const int64_t rows = seed == 1 ? 5 : 3;
    const Tensor scores = random_tensor({rows, 6}, seed);
    const Tensor weights = random_tensor({rows}, seed + 10, 0, 1);
    std::vector<int64_t> labels(static_cast<size_t>(rows));
    for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int64_t>((i * 5 + seed) % 6);
    const Tensor sparse = from_values(labels, {rows});
    const Tensor one_hot = ops::one_hot(sparse, 6);
    if (id == "binary_accuracy") {
      out.push_back({ops::cast(ops::greater(random_tensor({rows, 1}, seed + 20), scalar(0.0)), kFloat32),
                     random_tensor({rows, 1}, seed + 30, 0, 1), weights});
    } else if (id == "categorical_accuracy" || id == "top_k_categorical_accuracy") {
      out.push_back({one_hot, scores, weights});
    } else if (id == "mse" || id == "mae") {
      out.push_back({random_tensor({rows, 6}, seed + 40), scores, weights});
    } else {  // accuracy (auto → sparse), sparse accuracies
      out.push_back({sparse, scores, weights});
    }
  }
  return out;
}

const char* const kNames[] = {"accuracy",
                              "binary_accuracy",
                              "categorical_accuracy",
                              "sparse_categorical_accuracy",
                              "top_k_categorical_accuracy",
                              "sparse_top_k_categorical_accuracy",
                              "mse",
                              "mae"};

TEST(MetricTest, MergingEqualsOneInstanceFedBothBatches) {
  for (const char* id : kNames) {
    const auto batches = batches_for(id);
    for (bool weighted : {false, true}) {
      const auto a = Metric::from_name(id), b = Metric::from_name(id), both = Metric::from_name(id);
      auto feed = [&](Metric& m, const Batch& batch) {
        m.update_state(batch.y_true, batch.y_pred, weighted ? batch.sample_weight : Tensor());
      };
      feed(*a, batches[0]);
      feed(*b, batches[1]);
      feed(*both, batches[0]);
      feed(*both, batches[1]);
      a->merge_state(b->state());
      EXPECT_NEAR(a->result(), both->result(), 1e-12) << id;
      ASSERT_EQ(a->state().size(), both->state().size());
      for (size_t i = 0; i < a->state().size(); ++i) EXPECT_NEAR(a->state()[i], both->state()[i], 1e-12) << id;
      EXPECT_GT(both->state().back(), 0.0) << id;  // samples were counted
    }
  }
}

TEST(MetricTest, MeanAndSumMerge) {
  metrics::Mean a, b;
  a.update_state(1.0);
  b.update_state(from_values({2.f, 3.f}));
  a.merge_state(b.state());
  EXPECT_DOUBLE_EQ(a.result(), 2.0);
  metrics::Sum s, t;
  s.update_state(1.5);
  t.update_state(2.5);
  s.merge_state(t.state());
  EXPECT_DOUBLE_EQ(s.result(), 4.0);
  EXPECT_THAT([&] { a.merge_state(s.state()); },
              ThrowsMessage<ValueError>(HasSubstr("mean: cannot merge a state of 1 values into one of 2")));
}

TEST(MetricTest, ResetAndClone) {
  for (const char* id : kNames) {
    const auto m = Metric::from_name(id);
    const auto batch = batches_for(id)[0];
    m->update_state(batch.y_true, batch.y_pred);
    const double before = m->result();
    const std::unique_ptr<Metric> copy = m->clone();
    EXPECT_EQ(copy->name(), m->name()) << id;
    EXPECT_EQ(copy->to_config(), m->to_config()) << id;
    EXPECT_EQ(copy->result(), 0.0) << id;  // a fresh state
    copy->update_state(batch.y_true, batch.y_pred);
    EXPECT_EQ(copy->result(), before) << id;
    m->reset_state();
    EXPECT_EQ(m->result(), 0.0) << id;
    for (double v : m->state()) EXPECT_EQ(v, 0.0);
  }
  metrics::Mean mean({.name = "loss"});
  mean.update_state(3.0);
  EXPECT_EQ(mean.clone()->name(), "loss");
  EXPECT_EQ(mean.clone()->result(), 0.0);
  EXPECT_EQ(metrics::Sum().clone()->to_config()["class_name"], "Sum");
}

TEST(MetricTest, FromNameKnowsKerasNames) {
  struct Case {
    const char* id;
    const char* class_name;
  };
  const Case cases[] = {
      {"accuracy", "Accuracy"},
      {"acc", "Accuracy"},
      {"Accuracy", "Accuracy"},
      {"binary_accuracy", "BinaryAccuracy"},
      {"BinaryAccuracy", "BinaryAccuracy"},
      {"categorical_accuracy", "CategoricalAccuracy"},
      {"CategoricalAccuracy", "CategoricalAccuracy"},
      {"sparse_categorical_accuracy", "SparseCategoricalAccuracy"},
      {"SparseCategoricalAccuracy", "SparseCategoricalAccuracy"},
      {"top_k_categorical_accuracy", "TopKCategoricalAccuracy"},
      {"TopKCategoricalAccuracy", "TopKCategoricalAccuracy"},
      {"sparse_top_k_categorical_accuracy", "SparseTopKCategoricalAccuracy"},
      {"SparseTopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy"},
      {"mse", "MeanSquaredError"},
      {"MSE", "MeanSquaredError"},
      {"mean_squared_error", "MeanSquaredError"},
      {"MeanSquaredError", "MeanSquaredError"},
      {"mae", "MeanAbsoluteError"},
      {"MAE", "MeanAbsoluteError"},
      {"mean_absolute_error", "MeanAbsoluteError"},
      {"MeanAbsoluteError", "MeanAbsoluteError"},
  };
  for (const Case& c : cases) {
    const auto m = Metric::from_name(c.id);
    EXPECT_EQ(m->to_config()["class_name"], c.class_name) << c.id;
    EXPECT_EQ(m->name(), c.id);  // compile() names a metric after its string
  }
  EXPECT_EQ(std::dynamic_pointer_cast<metrics::Accuracy>(Metric::from_name("acc"))->kind(),
            metrics::AccuracyKind::kAuto);
  EXPECT_EQ(
      std::dynamic_pointer_cast<metrics::TopKCategoricalAccuracy>(Metric::from_name("top_k_categorical_accuracy"))->k(),
      5);
  EXPECT_THAT([] { Metric::from_name("precision"); },
              ThrowsMessage<ValueError>(
                  HasSubstr("Metric::from_name: unknown metric 'precision'; known names: accuracy, acc, ")));
  Shared<Metric> by_name = "accuracy";
  EXPECT_EQ(by_name->name(), "accuracy");
}

TEST(MetricTest, ConfigsRoundTrip) {
  std::vector<std::shared_ptr<Metric>> all = {
      std::make_shared<metrics::Mean>(metrics::MeanOptions{"loss"}),
      std::make_shared<metrics::Sum>(),
      std::make_shared<metrics::Accuracy>(),
      std::make_shared<metrics::Accuracy>(metrics::Accuracy::automatic("acc")),
      std::make_shared<metrics::BinaryAccuracy>(metrics::BinaryAccuracyOptions{.threshold = 0.3, .name = "b"}),
      std::make_shared<metrics::CategoricalAccuracy>(),
      std::make_shared<metrics::SparseCategoricalAccuracy>(),
      std::make_shared<metrics::TopKCategoricalAccuracy>(metrics::TopKCategoricalAccuracyOptions{.k = 3}),
      std::make_shared<metrics::SparseTopKCategoricalAccuracy>(metrics::SparseTopKCategoricalAccuracyOptions{.k = 2}),
      std::make_shared<metrics::MeanSquaredError>(),
      std::make_shared<metrics::MeanAbsoluteError>(metrics::MeanAbsoluteErrorOptions{"mae"}),
  };
  std::set<std::string> covered;
  for (const auto& m : all) {
    const nlohmann::json config = m->to_config();
    const auto back = Metric::from_config(config);
    EXPECT_EQ(back->to_config(), config) << config.dump();
    EXPECT_EQ(back->name(), m->name());
    EXPECT_EQ(back->state().size(), m->state().size());
    covered.insert(config["class_name"].get<std::string>());
  }
  testing::expect_registry_covered(metrics::registered_metrics(), covered, {"UserMeanPrediction"});
  EXPECT_EQ(metrics::BinaryAccuracy().get_config(), (nlohmann::json{{"name", "binary_accuracy"}, {"threshold", 0.5}}));
  EXPECT_EQ(metrics::Accuracy().get_config(), (nlohmann::json{{"name", "accuracy"}, {"kind", "exact"}}));
  // A Keras config without chorus's "kind" is the exact Accuracy.
  const auto keras = Metric::from_config({{"class_name", "Accuracy"}, {"config", {{"name", "accuracy"}}}});
  EXPECT_EQ(std::dynamic_pointer_cast<metrics::Accuracy>(keras)->kind(), metrics::AccuracyKind::kExact);
}

TEST(MetricTest, FromConfigErrors) {
  EXPECT_THAT([] { Metric::from_config({{"class_name", "AUC"}, {"config", nlohmann::json::object()}}); },
              ThrowsMessage<ValueError>(
                  HasSubstr("Metric::from_config: unknown metric class 'AUC'. Known classes: Accuracy, BinaryAccuracy, "
                            "CategoricalAccuracy, Mean")));
  EXPECT_THAT([] { Metric::from_config(nlohmann::json::array()); },
              ThrowsMessage<ValueError>(HasSubstr("Metric::from_config: expected a config object, got []")));
  EXPECT_THAT([] { Metric::from_config({{"config", nlohmann::json::object()}}); },
              ThrowsMessage<ValueError>(HasSubstr("Metric::from_config: config is missing 'class_name'")));
  EXPECT_THAT([] { Metric::from_config({{"class_name", "Accuracy"}, {"config", {{"kind", "fuzzy"}}}}); },
              ThrowsMessage<ValueError>(HasSubstr("Accuracy: unknown kind 'fuzzy'")));
  EXPECT_THAT([] { Metric::from_config({{"class_name", "TopKCategoricalAccuracy"}, {"config", {{"k", "five"}}}}); },
              ThrowsMessage<ValueError>(HasSubstr(
                  "TopKCategoricalAccuracy: config key 'k': expected an integer, got \"five\" (a string)")));
  const nlohmann::json sorted_ids = {{"class_name", "SparseTopKCategoricalAccuracy"},
                                     {"config", {{"from_sorted_ids", true}}}};
  EXPECT_THAT([&] { Metric::from_config(sorted_ids); },
              ThrowsMessage<ValueError>(
                  HasSubstr("SparseTopKCategoricalAccuracy: from_sorted_ids=true is not supported")));
}

// Configs are read strictly: a key no metric takes is an error naming the class and the
// key (with the likely intended one), and Keras's own keys still load.
TEST(MetricTest, FromConfigRejectsUnexpectedKeys) {
  EXPECT_THAT([] { Metric::from_config({{"class_name", "BinaryAccuracy"}, {"config", {{"treshold", 0.7}}}}); },
              ThrowsMessage<ValueError>(
                  Eq("BinaryAccuracy: unexpected config key 'treshold' (did you mean 'threshold'?)")));
  EXPECT_THAT([] { Metric::from_config({{"class_name", "Mean"}, {"config", {{"color", "red"}}}}); },
              ThrowsMessage<ValueError>(Eq("Mean: unexpected config key 'color'")));
  EXPECT_THAT([] { Metric::from_config({{"class_name", "BinaryAccuracy"}, {"config", {{"threshold", "half"}}}}); },
              ThrowsMessage<ValueError>(
                  Eq("BinaryAccuracy: config key 'threshold': expected a number, got \"half\" (a string)")));
  EXPECT_THAT([] { Metric::from_config({{"class_name", "Mean"}, {"config", {}}, {"modul", "keras.metrics"}}); },
              ThrowsMessage<ValueError>(
                  Eq("Metric::from_config: unexpected config key 'modul' (did you mean 'module'?)")));
  // As Keras 3 serialises a metric: its dtype and the outer module keys are accepted.
  const auto keras = Metric::from_config(nlohmann::json::parse(R"({"module": "keras.metrics",
      "class_name": "BinaryAccuracy", "registered_name": null,
      "config": {"name": "acc", "dtype": "float32", "threshold": 0.25}})"));
  EXPECT_EQ(keras->name(), "acc");
  EXPECT_EQ(keras->get_config()["threshold"], 0.25);
}

}  // namespace
}  // namespace chorus
