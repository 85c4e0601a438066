// Metric's state merge and the name/config factories over every metric in
// chorus/metrics.
#include "chorus/metrics/metric.h"

#include <algorithm>
#include <cctype>

#include "chorus/metrics/metrics.h"

namespace chorus::metrics {
namespace {

// A name from_name accepts and the class it makes; Keras's compile() names a metric
// after the string it was given ("mse" stays "mse").
struct NamedMetric {
  std::string_view id;
  std::string_view class_name;
};

constexpr NamedMetric kNamedMetrics[] = {
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

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// The metric of class `class_name` from its get_config() output.
std::shared_ptr<Metric> make_from_config(const std::string& class_name, const nlohmann::json& c) {
  auto name = [&](const char* keras_default) { return c.value("name", std::string(keras_default)); };
  if (class_name == "Mean") return std::make_shared<Mean>(MeanOptions{name("mean")});
  if (class_name == "Sum") return std::make_shared<Sum>(SumOptions{name("sum")});
  if (class_name == "Accuracy") {
    return std::make_shared<Accuracy>(
        AccuracyOptions{.name = name("accuracy"), .kind = Accuracy::parse_kind(c.value("kind", std::string("exact")))});
  }
  if (class_name == "BinaryAccuracy") {
    return std::make_shared<BinaryAccuracy>(
        BinaryAccuracyOptions{.threshold = c.value("threshold", 0.5), .name = name("binary_accuracy")});
  }
  if (class_name == "CategoricalAccuracy") {
    return std::make_shared<CategoricalAccuracy>(CategoricalAccuracyOptions{name("categorical_accuracy")});
  }
  if (class_name == "SparseCategoricalAccuracy") {
    return std::make_shared<SparseCategoricalAccuracy>(
        SparseCategoricalAccuracyOptions{name("sparse_categorical_accuracy")});
  }
  if (class_name == "TopKCategoricalAccuracy") {
    return std::make_shared<TopKCategoricalAccuracy>(
        TopKCategoricalAccuracyOptions{.k = c.value("k", int64_t{5}), .name = name("top_k_categorical_accuracy")});
  }
  if (class_name == "SparseTopKCategoricalAccuracy") {
    if (c.value("from_sorted_ids", false)) {
      throw_error<ValueError>("SparseTopKCategoricalAccuracy: from_sorted_ids=true is not supported");
    }
    return std::make_shared<SparseTopKCategoricalAccuracy>(SparseTopKCategoricalAccuracyOptions{
        .k = c.value("k", int64_t{5}), .name = name("sparse_top_k_categorical_accuracy")});
  }
  if (class_name == "MeanSquaredError") {
    return std::make_shared<MeanSquaredError>(MeanSquaredErrorOptions{name("mean_squared_error")});
  }
  if (class_name == "MeanAbsoluteError") {
    return std::make_shared<MeanAbsoluteError>(MeanAbsoluteErrorOptions{name("mean_absolute_error")});
  }
  throw_error<ValueError>(
      "Metric::from_config: unknown metric class '{}'; known classes: Mean, Sum, Accuracy, BinaryAccuracy, "
      "CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, "
      "MeanSquaredError, MeanAbsoluteError",
      class_name);
}

}  // namespace

void Metric::merge_state(std::span<const double> other) {
  if (other.size() != state_.size()) {
    throw_error<ValueError>("{}: cannot merge a state of {} values into one of {}", name_, other.size(), state_.size());
  }
  for (size_t i = 0; i < state_.size(); ++i) state_[i] += other[i];
}

std::shared_ptr<Metric> Metric::from_name(std::string_view name) {
  const std::string id(name);
  if (lower(name) == "accuracy" || lower(name) == "acc") return std::make_shared<Accuracy>(Accuracy::automatic(id));
  for (const NamedMetric& entry : kNamedMetrics) {
    if (entry.id == name) return make_from_config(std::string(entry.class_name), {{"name", id}});
  }
  std::string known = "accuracy, acc";
  for (const NamedMetric& entry : kNamedMetrics) known += ", " + std::string(entry.id);
  throw_error<ValueError>("Metric::from_name: unknown metric '{}'; known names: {}", name, known);
}

std::shared_ptr<Metric> Metric::from_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("class_name") || !config["class_name"].is_string()) {
    throw_error<ValueError>("Metric::from_config: expected {{\"class_name\": ..., \"config\": ...}}, got {}",
                            config.dump());
  }
  const std::string class_name = config["class_name"];
  const nlohmann::json args = config.value("config", nlohmann::json::object());
  try {
    return make_from_config(class_name, args);
  } catch (const nlohmann::json::exception& e) {
    throw_error<ValueError>("Metric::from_config: bad config for {}: {} ({})", class_name, args.dump(), e.what());
  }
}

}  // namespace chorus::metrics
