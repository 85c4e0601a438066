// Loss's reduction and the name/config factories over every loss in chorus/losses.
#include "chorus/losses/loss.h"

#include <vector>

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

std::string known_names() {
  std::string out;
  for (const NamedLoss& entry : named_losses()) out += (out.empty() ? "" : ", ") + std::string(entry.id);
  return out;
}

// The loss of class `class_name` from its get_config() output.
std::shared_ptr<Loss> make_from_config(const std::string& class_name, const nlohmann::json& c) {
  const std::string reduction = internal::reduction_of(c, class_name);
  auto name = [&](const char* keras_default) { return c.value("name", std::string(keras_default)); };
  if (class_name == "MeanSquaredError") {
    return std::make_shared<MeanSquaredError>(MeanSquaredErrorOptions{name("mean_squared_error"), reduction});
  }
  if (class_name == "MeanAbsoluteError") {
    return std::make_shared<MeanAbsoluteError>(MeanAbsoluteErrorOptions{name("mean_absolute_error"), reduction});
  }
  if (class_name == "Huber") {
    return std::make_shared<Huber>(HuberOptions{.delta = c.value("delta", 1.0), .name = name("huber_loss"), .reduction = reduction});
  }
  if (class_name == "BinaryCrossentropy") {
    return std::make_shared<BinaryCrossentropy>(
        BinaryCrossentropyOptions{.from_logits = c.value("from_logits", false),
                                  .label_smoothing = c.value("label_smoothing", 0.0),
                                  .axis = c.value("axis", -1),
                                  .name = name("binary_crossentropy"),
                                  .reduction = reduction});
  }
  if (class_name == "CategoricalCrossentropy") {
    return std::make_shared<CategoricalCrossentropy>(
        CategoricalCrossentropyOptions{.from_logits = c.value("from_logits", false),
                                       .label_smoothing = c.value("label_smoothing", 0.0),
                                       .axis = c.value("axis", -1),
                                       .name = name("categorical_crossentropy"),
                                       .reduction = reduction});
  }
  if (class_name == "SparseCategoricalCrossentropy") {
    if (c.contains("ignore_class") && !c["ignore_class"].is_null()) {
      throw_error<ValueError>("SparseCategoricalCrossentropy: ignore_class is not supported, got {}",
                              c["ignore_class"].dump());
    }
    return std::make_shared<SparseCategoricalCrossentropy>(SparseCategoricalCrossentropyOptions{
        .from_logits = c.value("from_logits", false),
        .name = name("sparse_categorical_crossentropy"),
        .reduction = reduction});
  }
  throw_error<ValueError>(
      "Loss::from_config: unknown loss class '{}'; known classes: MeanSquaredError, MeanAbsoluteError, Huber, "
      "BinaryCrossentropy, CategoricalCrossentropy, SparseCategoricalCrossentropy",
      class_name);
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
    return make_from_config(std::string(entry.class_name), config);
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
    return make_from_config(class_name, args);
  } catch (const nlohmann::json::exception& e) {
    throw_error<ValueError>("Loss::from_config: bad config for {}: {} ({})", class_name, args.dump(), e.what());
  }
}

}  // namespace chorus::losses
