// The name and config factories over every metric in chorus/metrics (Metric::from_name,
// Metric::from_config, register_metric): apart from metric.cc, so the base includes none
// of its subclasses.
#include "chorus/metrics/metric.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>
#include <vector>

#include "chorus/core/config_reader.h"
#include "chorus/core/registry.h"
#include "chorus/metrics/metrics.h"

namespace chorus::metrics {
namespace {

// The names from_name accepts for a built-in metric class besides "accuracy": Keras's
// function name and its aliases, then the class name itself. Keras's compile() names a
// metric after the string it was given ("mse" stays "mse").
struct MetricNames {
  std::string_view class_name;
  std::array<std::string_view, 3> aliases;  // the unused ones empty

  // The aliases, then the class name.
  std::vector<std::string_view> ids() const {
    std::vector<std::string_view> out;
    for (std::string_view alias : aliases) {
      if (!alias.empty()) out.push_back(alias);
    }
    out.push_back(class_name);
    return out;
  }
};

constexpr MetricNames kMetricNames[] = {
    {"BinaryAccuracy", {"binary_accuracy"}},
    {"CategoricalAccuracy", {"categorical_accuracy"}},
    {"SparseCategoricalAccuracy", {"sparse_categorical_accuracy"}},
    {"TopKCategoricalAccuracy", {"top_k_categorical_accuracy"}},
    {"SparseTopKCategoricalAccuracy", {"sparse_top_k_categorical_accuracy"}},
    {"MeanSquaredError", {"mse", "MSE", "mean_squared_error"}},
    {"MeanAbsoluteError", {"mae", "MAE", "mean_absolute_error"}},
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// The keys every metric's config has: name, and Keras's dtype (chorus keeps metric state
// in double).
template <class Options>
void read_metric_keys(Options& options, ConfigReader& r) {
  options.name = r.string("name", options.name);
  r.accept({"dtype"});
}

// A factory that makes metric T from its get_config() output, with Keras's defaults for
// absent keys: `read_own` reads T's own keys into its options.
template <class T, class Options>
Registry<Metric>::Factory metric_factory(const char* class_name, Options (*read_own)(ConfigReader&) = nullptr) {
  return options_factory<Metric, T>(class_name, read_own, read_metric_keys<Options>);
}

Registry<Metric>& registry() {
  static Registry<Metric> instance(
      "metric",
      {
          {"Mean", metric_factory<Mean, MeanOptions>("Mean")},
          {"Sum", metric_factory<Sum, SumOptions>("Sum")},
          {"Accuracy", metric_factory<Accuracy, AccuracyOptions>(
                           "Accuracy",
                           [](ConfigReader& r) {
                             return AccuracyOptions{.kind = Accuracy::parse_kind(r.string("kind", "exact"))};
                           })},
          {"BinaryAccuracy", metric_factory<BinaryAccuracy, BinaryAccuracyOptions>(
                                 "BinaryAccuracy",
                                 [](ConfigReader& r) {
                                   return BinaryAccuracyOptions{.threshold = r.number("threshold", 0.5)};
                                 })},
          {"CategoricalAccuracy",
           metric_factory<CategoricalAccuracy, CategoricalAccuracyOptions>("CategoricalAccuracy")},
          {"SparseCategoricalAccuracy",
           metric_factory<SparseCategoricalAccuracy, SparseCategoricalAccuracyOptions>("SparseCategoricalAccuracy")},
          {"TopKCategoricalAccuracy", metric_factory<TopKCategoricalAccuracy, TopKCategoricalAccuracyOptions>(
                                          "TopKCategoricalAccuracy",
                                          [](ConfigReader& r) {
                                            return TopKCategoricalAccuracyOptions{.k = r.integer("k", 5)};
                                          })},
          {"SparseTopKCategoricalAccuracy",
           metric_factory<SparseTopKCategoricalAccuracy, SparseTopKCategoricalAccuracyOptions>(
               "SparseTopKCategoricalAccuracy",
               [](ConfigReader& r) {
                 r.accept_inert({"from_sorted_ids"}, false);
                 return SparseTopKCategoricalAccuracyOptions{.k = r.integer("k", 5)};
               })},
          {"MeanSquaredError", metric_factory<MeanSquaredError, MeanSquaredErrorOptions>("MeanSquaredError")},
          {"MeanAbsoluteError", metric_factory<MeanAbsoluteError, MeanAbsoluteErrorOptions>("MeanAbsoluteError")},
      });
  return instance;
}

}  // namespace

std::shared_ptr<Metric> Metric::from_name(std::string_view name) {
  const std::string id(name);
  if (lower(name) == "accuracy" || lower(name) == "acc") return std::make_shared<Accuracy>(Accuracy::automatic(id));
  for (const MetricNames& entry : kMetricNames) {
    const auto ids = entry.ids();
    if (std::find(ids.begin(), ids.end(), name) != ids.end()) {
      return registry().make("Metric::from_name", std::string(entry.class_name), {{"name", id}});
    }
  }
  // A class registered by the user, by its class name (as Keras's compile(metrics=["MyMetric"])).
  if (registry().contains(id)) return registry().make("Metric::from_name", id, nlohmann::json::object());
  std::string known = "accuracy, acc";
  for (const MetricNames& entry : kMetricNames) {
    for (std::string_view known_id : entry.ids()) known += ", " + std::string(known_id);
  }
  for (const std::string& class_name : registry().names()) {
    const bool builtin = std::any_of(std::begin(kMetricNames), std::end(kMetricNames),
                                     [&](const MetricNames& entry) { return entry.class_name == class_name; });
    if (!builtin) known += ", " + class_name;
  }
  throw_error<ValueError>("Metric::from_name: unknown metric '{}'; known names: {}", name, known);
}

std::shared_ptr<Metric> Metric::from_config(const nlohmann::json& config) {
  return registry().from_config("Metric::from_config", config);
}

void register_metric(std::string class_name, Registry<Metric>::Factory factory) {
  registry().add("register_metric", std::move(class_name), std::move(factory));
}

std::vector<std::string> registered_metrics() { return registry().names(); }

}  // namespace chorus::metrics
