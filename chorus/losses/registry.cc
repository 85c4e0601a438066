// The name and config factories over every loss in chorus/losses (Loss::from_name,
// Loss::from_config, register_loss): apart from loss.cc, so the base includes none of its
// subclasses.
#include "chorus/losses/loss.h"

#include <algorithm>
#include <vector>

#include "chorus/core/config_reader.h"
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

// The keys every loss's config has: name, reduction, and Keras's dtype (chorus computes
// in the inputs' dtype).
template <class Options>
void read_loss_keys(Options& options, ConfigReader& r) {
  options.name = r.string("name", options.name);
  options.reduction = internal::reduction_of(r);
  r.accept({"dtype"});
}

// A factory that makes loss T from its get_config() output, with Keras's defaults for
// absent keys: `read_own` reads T's own keys into its options.
template <class T, class Options>
Registry<Loss>::Factory loss_factory(const char* class_name, Options (*read_own)(ConfigReader&) = nullptr) {
  return options_factory<Loss, T>(class_name, read_own, read_loss_keys<Options>);
}

// The options the two dense cross-entropies share.
template <class Options>
Options crossentropy_options(ConfigReader& r) {
  return Options{.from_logits = r.boolean("from_logits", false),
                 .label_smoothing = r.number("label_smoothing", 0.0),
                 .axis = r.value<int>("axis", -1)};
}

Registry<Loss>& registry() {
  static Registry<Loss> instance(
      "loss",
      {
          {"MeanSquaredError", loss_factory<MeanSquaredError, MeanSquaredErrorOptions>("MeanSquaredError")},
          {"MeanAbsoluteError", loss_factory<MeanAbsoluteError, MeanAbsoluteErrorOptions>("MeanAbsoluteError")},
          {"Huber", loss_factory<Huber, HuberOptions>(
                        "Huber", [](ConfigReader& r) { return HuberOptions{.delta = r.number("delta", 1.0)}; })},
          {"BinaryCrossentropy", loss_factory<BinaryCrossentropy, BinaryCrossentropyOptions>(
                                     "BinaryCrossentropy", crossentropy_options<BinaryCrossentropyOptions>)},
          {"CategoricalCrossentropy",
           loss_factory<CategoricalCrossentropy, CategoricalCrossentropyOptions>(
               "CategoricalCrossentropy", crossentropy_options<CategoricalCrossentropyOptions>)},
          {"SparseCategoricalCrossentropy",
           loss_factory<SparseCategoricalCrossentropy, SparseCategoricalCrossentropyOptions>(
               "SparseCategoricalCrossentropy",
               [](ConfigReader& r) {
                 r.accept_inert({"ignore_class"});
                 return SparseCategoricalCrossentropyOptions{.from_logits = r.boolean("from_logits", false)};
               })},
      });
  return instance;
}

}  // namespace

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
  return registry().from_config("Loss::from_config", config);
}

void register_loss(std::string class_name, Registry<Loss>::Factory factory) {
  registry().add("register_loss", std::move(class_name), std::move(factory));
}

std::vector<std::string> registered_losses() { return registry().names(); }

}  // namespace chorus::losses
