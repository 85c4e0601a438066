// Loss's reduction and the name/config factories over every loss in chorus/losses.
#include "chorus/losses/loss.h"

#include <algorithm>
#include <vector>

#include "chorus/core/registry.h"
#include "chorus/losses/loss_util.h"
#include "chorus/losses/losses.h"

namespace chorus::losses {
namespace {

// A name from_name accepts and the class it makes. Keras names a loss made from a
// function's name ("mse") after that string, and one made from a class name
// ("MeanSquaredError") with the class's default name.
struct NamedLoss {
  std::string_view id;
  std::string_view class_name;
  bool named_by_id;
};

const std::vector<NamedLoss>& named_losses() {
  static const std::vector<NamedLoss> table = {
      {"mse", "MeanSquaredError", true},
      {"MSE", "MeanSquaredError", true},
      {"mean_squared_error", "MeanSquaredError", true},
      {"MeanSquaredError", "MeanSquaredError", false},
      {"mae", "MeanAbsoluteError", true},
      {"MAE", "MeanAbsoluteError", true},
      {"mean_absolute_error", "MeanAbsoluteError", true},
      {"MeanAbsoluteError", "MeanAbsoluteError", false},
      {"huber", "Huber", true},
      {"Huber", "Huber", false},
      {"bce", "BinaryCrossentropy", true},
      {"BCE", "BinaryCrossentropy", true},
      {"binary_crossentropy", "BinaryCrossentropy", true},
      {"BinaryCrossentropy", "BinaryCrossentropy", false},
      {"categorical_crossentropy", "CategoricalCrossentropy", true},
      {"CategoricalCrossentropy", "CategoricalCrossentropy", false},
      {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy", true},
      {"SparseCategoricalCrossentropy", "SparseCategoricalCrossentropy", false},
  };
  return table;
}

Registry<Loss>& registry();

// Keras's names, then the classes users registered.
std::string known_names() {
  std::string out;
  for (const NamedLoss& entry : named_losses()) out += (out.empty() ? "" : ", ") + std::string(entry.id);
  for (const std::string& class_name : registry().names()) {
    const bool builtin = std::any_of(named_losses().begin(), named_losses().end(),
                                     [&](const NamedLoss& entry) { return entry.id == class_name; });
    if (!builtin) out += ", " + class_name;
  }
  return out;
}

// Each built-in loss from its get_config() output, with Keras's defaults for absent keys.
Registry<Loss>& registry() {
  using nlohmann::json;
  auto name = [](const json& c, const char* keras_default) { return c.value("name", std::string(keras_default)); };
  auto reduction = [](const json& c, const char* class_name) { return internal::reduction_of(c, class_name); };
  static Registry<Loss> instance("loss", {
      {"MeanSquaredError", [=](const json& c) -> std::shared_ptr<Loss> {
         return std::make_shared<MeanSquaredError>(
             MeanSquaredErrorOptions{name(c, "mean_squared_error"), reduction(c, "MeanSquaredError")});
       }},
      {"MeanAbsoluteError", [=](const json& c) -> std::shared_ptr<Loss> {
         return std::make_shared<MeanAbsoluteError>(
             MeanAbsoluteErrorOptions{name(c, "mean_absolute_error"), reduction(c, "MeanAbsoluteError")});
       }},
      {"Huber", [=](const json& c) -> std::shared_ptr<Loss> {
         return std::make_shared<Huber>(HuberOptions{
             .delta = c.value("delta", 1.0), .name = name(c, "huber_loss"), .reduction = reduction(c, "Huber")});
       }},
      {"BinaryCrossentropy", [=](const json& c) -> std::shared_ptr<Loss> {
         return std::make_shared<BinaryCrossentropy>(
             BinaryCrossentropyOptions{.from_logits = c.value("from_logits", false),
                                       .label_smoothing = c.value("label_smoothing", 0.0),
                                       .axis = c.value("axis", -1),
                                       .name = name(c, "binary_crossentropy"),
                                       .reduction = reduction(c, "BinaryCrossentropy")});
       }},
      {"CategoricalCrossentropy", [=](const json& c) -> std::shared_ptr<Loss> {
         return std::make_shared<CategoricalCrossentropy>(
             CategoricalCrossentropyOptions{.from_logits = c.value("from_logits", false),
                                            .label_smoothing = c.value("label_smoothing", 0.0),
                                            .axis = c.value("axis", -1),
                                            .name = name(c, "categorical_crossentropy"),
                                            .reduction = reduction(c, "CategoricalCrossentropy")});
       }},
      {"SparseCategoricalCrossentropy", [=](const json& c) -> std::shared_ptr<Loss> {
         if (c.contains("ignore_class") && !c["ignore_class"].is_null()) {
           throw_error<ValueError>("SparseCategoricalCrossentropy: ignore_class is not supported, got {}",
                                   c["ignore_class"].dump());
         }
         return std::make_shared<SparseCategoricalCrossentropy>(
             SparseCategoricalCrossentropyOptions{.from_logits = c.value("from_logits", false),
                                                  .name = name(c, "sparse_categorical_crossentropy"),
                                                  .reduction = reduction(c, "SparseCategoricalCrossentropy")});
       }},
  });
  return instance;
}

}  // namespace

Loss::Loss(std::string name, std::string reduction) : name_(std::move(name)), reduction_(std::move(reduction)) {
  internal::check_reduction(name_, reduction_);
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const {
  internal::check_defined(name_, y_true, y_pred);
  return internal::reduce_weighted(name_, call(y_true, y_pred), sample_weight, reduction_);
}

std::shared_ptr<Loss> Loss::from_name(std::string_view name) {
  for (const NamedLoss& entry : named_losses()) {
    if (entry.id != name) continue;
    nlohmann::json config = nlohmann::json::object();
    if (entry.named_by_id) config["name"] = std::string(name);
    return registry().make("Loss::from_name", std::string(entry.class_name), config);
  }
  // A class registered by the user, by its class name (as Keras's compile(loss="MyLoss")).
  if (registry().contains(std::string(name))) {
    return registry().make("Loss::from_name", std::string(name), nlohmann::json::object());
  }
  throw_error<ValueError>("Loss::from_name: unknown loss '{}'; known names: {}", name, known_names());
}

std::shared_ptr<Loss> Loss::from_config(const nlohmann::json& config) {
  if (!config.is_object() || !config.contains("class_name") || !config["class_name"].is_string()) {
    throw_error<ValueError>("Loss::from_config: expected {{\"class_name\": ..., \"config\": ...}}, got {}",
                            config.dump());
  }
  const std::string class_name = config["class_name"];
  const nlohmann::json args = config.value("config", nlohmann::json::object());
  try {
    return registry().make("Loss::from_config", class_name, args);
  } catch (const nlohmann::json::exception& e) {
    throw_error<ValueError>("Loss::from_config: bad config for {}: {} ({})", class_name, args.dump(), e.what());
  }
}

void register_loss(std::string class_name, Registry<Loss>::Factory factory) {
  registry().add("register_loss", std::move(class_name), std::move(factory));
}

}  // namespace chorus::losses
