#include "chorus/models/sequential.h"

#include "chorus/core/error.h"
#include "chorus/core/error_context.h"
#include "chorus/layers/registry.h"

namespace chorus::models {

Sequential::Sequential(std::vector<Shared<layers::Layer>> layers, std::string name)
    : Model("Sequential", std::move(name)) {
  for (auto& layer : layers) add(std::move(layer));
}

void Sequential::add(Shared<layers::Layer> layer) {
  if (!layer) throw_error<ValueError>("{}: add() got an empty layer", name());
  std::shared_ptr<layers::Layer> shared = layer.shared_ptr();
  if (auto input = std::dynamic_pointer_cast<layers::InputLayer>(shared)) {
    if (input_ || !stack_.empty()) {
      throw_error<ValueError>("{}: an InputLayer can only be the first layer; got {} after {} layers", name(),
                              input->name(), stack_.size() + (input_ ? 1 : 0));
    }
    input_ = input;
    symbolic_output_ = layers::Input(input->shape(), input->dtype(), input->name());
    build_from(Tree(symbolic_output_));
    return;
  }
  if (symbolic_output_.defined()) {
    Tree out = layers::call_shared(shared, Tree(symbolic_output_));
    if (!out.is_tensor()) {
      throw_error<ValueError>("{}: layer {} returns {}; a Sequential layer must return one tensor", name(),
                              shared->name(), out.to_string());
    }
    symbolic_output_ = out.tensor();
  }
  stack_.push_back(shared);
  track(shared);
}

Tree Sequential::call(const Tree& inputs, bool training) {
  if (stack_.empty()) throw_error<ValueError>("{}: the model has no layers", name());
  Tree x = inputs;
  for (const auto& layer : stack_) x = (*layer)(x, training);
  return x;
}

nlohmann::json Sequential::get_config() const {
  nlohmann::json layers_json = nlohmann::json::array();
  if (input_) layers_json.push_back({{"class_name", "InputLayer"}, {"config", input_->get_config()}});
  for (const auto& layer : stack_) layers_json.push_back({{"class_name", layer->class_name()}, {"config", layer->get_config()}});
  return {{"name", name()}, {"trainable", trainable()}, {"layers", layers_json}};
}

std::unique_ptr<Sequential> Sequential::from_config(const nlohmann::json& config) {
  if (!config.is_object()) throw_error<ValueError>("config: expected an object, found {}", config.type_name());
  const auto name = config.find("name");
  if (name != config.end() && !name->is_string()) throw_error<ValueError>("config.name: expected a string, found {}", name->dump());
  const auto layers_json = config.find("layers");
  if (layers_json == config.end() || !layers_json->is_array()) {
    throw_error<ValueError>("config.layers: expected a list of layer configs, found {}",
                            layers_json == config.end() ? std::string("nothing") : layers_json->dump());
  }
  auto model = std::make_unique<Sequential>(std::vector<Shared<layers::Layer>>{},
                                            name == config.end() ? std::string() : name->get<std::string>());
  for (size_t i = 0; i < layers_json->size(); ++i) {
    with_error_context(fmt::format("config.layers[{}]", i),
                       [&] { model->add(layers::layer_from_config((*layers_json)[i])); });
  }
  return model;
}

std::shared_ptr<layers::Layer> Sequential::move_to_heap() && { return std::make_shared<Sequential>(std::move(*this)); }

}  // namespace chorus::models
