// Metric's state merge and the name/config factories over every metric in
// chorus/metrics.
#include "chorus/metrics/metric.h"

#include <algorithm>
#include <cctype>

#include "chorus/core/registry.h"
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

// Each built-in metric from its get_config() output, with Keras's defaults for absent keys.
Registry<Metric>& registry() {
  using nlohmann::json;
  using Made = std::shared_ptr<Metric>;
  auto name = [](const json& c, const char* keras_default) { return c.value("name", std::string(keras_default)); };
  static Registry<Metric> instance("metric", {
      {"Mean", [=](const json& c) -> Made { return std::make_shared<Mean>(MeanOptions{name(c, "mean")}); }},
      {"Sum", [=](const json& c) -> Made { return std::make_shared<Sum>(SumOptions{name(c, "sum")}); }},
      {"Accuracy", [=](const json& c) -> Made {
         return std::make_shared<Accuracy>(AccuracyOptions{
             .name = name(c, "accuracy"), .kind = Accuracy::parse_kind(c.value("kind", std::string("exact")))});
       }},
      {"BinaryAccuracy", [=](const json& c) -> Made {
         return std::make_shared<BinaryAccuracy>(
             BinaryAccuracyOptions{.threshold = c.value("threshold", 0.5), .name = name(c, "binary_accuracy")});
       }},
      {"CategoricalAccuracy", [=](const json& c) -> Made {
         return std::make_shared<CategoricalAccuracy>(CategoricalAccuracyOptions{name(c, "categorical_accuracy")});
       }},
      {"SparseCategoricalAccuracy", [=](const json& c) -> Made {
         return std::make_shared<SparseCategoricalAccuracy>(
             SparseCategoricalAccuracyOptions{name(c, "sparse_categorical_accuracy")});
       }},
      {"TopKCategoricalAccuracy", [=](const json& c) -> Made {
         return std::make_shared<TopKCategoricalAccuracy>(TopKCategoricalAccuracyOptions{
             .k = c.value("k", int64_t{5}), .name = name(c, "top_k_categorical_accuracy")});
       }},
      {"SparseTopKCategoricalAccuracy", [=](const json& c) -> Made {
         if (c.value("from_sorted_ids", false)) {
           throw_error<ValueError>("SparseTopKCategoricalAccuracy: from_sorted_ids=true is not supported");
         }
         return std::make_shared<SparseTopKCategoricalAccuracy>(SparseTopKCategoricalAccuracyOptions{
             .k = c.value("k", int64_t{5}), .name = name(c, "sparse_top_k_categorical_accuracy")});
       }},
      {"MeanSquaredError", [=](const json& c) -> Made {
         return std::make_shared<MeanSquaredError>(MeanSquaredErrorOptions{name(c, "mean_squared_error")});
       }},
      {"MeanAbsoluteError", [=](const json& c) -> Made {
         return std::make_shared<MeanAbsoluteError>(MeanAbsoluteErrorOptions{name(c, "mean_absolute_error")});
       }},
  });
  return instance;
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
    if (entry.id == name) return registry().make("Metric::from_name", std::string(entry.class_name), {{"name", id}});
  }
  // A class registered by the user, by its class name (as Keras's compile(metrics=["MyMetric"])).
  if (registry().contains(id)) return registry().make("Metric::from_name", id, nlohmann::json::object());
  std::string known = "accuracy, acc";
  for (const NamedMetric& entry : kNamedMetrics) known += ", " + std::string(entry.id);
  for (const std::string& class_name : registry().names()) {
    const bool builtin = std::any_of(std::begin(kNamedMetrics), std::end(kNamedMetrics),
                                     [&](const NamedMetric& entry) { return entry.id == class_name; });
    if (!builtin) known += ", " + class_name;
  }
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
    return registry().make("Metric::from_config", class_name, args);
  } catch (const nlohmann::json::exception& e) {
    throw_error<ValueError>("Metric::from_config: bad config for {}: {} ({})", class_name, args.dump(), e.what());
  }
}

void register_metric(std::string class_name, Registry<Metric>::Factory factory) {
  registry().add("register_metric", std::move(class_name), std::move(factory));
}

}  // namespace chorus::metrics
