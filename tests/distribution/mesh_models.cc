#include "tests/distribution/mesh_models.h"

namespace chorus::testing {

std::vector<Device> mesh_devices(int n) {
  std::vector<Device> out;
  for (int i = 0; i < n; ++i) out.push_back(Device::cpu(i));
  return out;
}

dist::DeviceMesh mesh(int64_t batch, int64_t model) {
  return dist::DeviceMesh({batch, model}, {"batch", "model"}, mesh_devices(static_cast<int>(batch * model)));
}

dist::LayoutMap megatron_layouts(const dist::DeviceMesh& device_mesh, const std::string& first,
                                 const std::string& second) {
  dist::LayoutMap layout_map(device_mesh);
  layout_map[first + "/kernel"] = {std::nullopt, "model"};
  layout_map[first + "/bias"] = {"model"};
  layout_map[second + "/kernel"] = {"model", std::nullopt};
  return layout_map;
}

std::unique_ptr<models::Model> three_layer_mlp(int64_t inputs, int64_t hidden, bool batch_norm) {
  Tensor x = layers::Input({inputs});
  Tensor h = layers::Dense(hidden, {.activation = "relu", .name = "d1"})(x);
  if (batch_norm) h = layers::BatchNormalization()(h);
  h = layers::Dense(8, {.activation = "tanh", .name = "d2"})(h);
  return std::make_unique<models::Model>(x, layers::Dense(3, {.name = "d3"})(h));
}

LabelledRows labelled_rows(int64_t n, int64_t features) {
  Generator gen(3);
  Tensor x = uniform(Shape{n, features}, gen, -1, 1);
  Tensor y = Tensor::empty(Shape{n}, kInt32);
  for (int64_t i = 0; i < n; ++i) {
    int best = 0;
    for (int c = 1; c < 3; ++c) best = x.data<float>()[i * features + c] > x.data<float>()[i * features + best] ? c : best;
    y.data<int32_t>()[i] = best;
  }
  return {x, y};
}

MeshRun train_three_layer_mlp(std::shared_ptr<dist::Distribution> distribution,
                              Shared<optimizers::Optimizer> optimizer, bool batch_norm, int64_t batch_size) {
  layers::set_random_seed(5);
  dist::set_distribution(std::move(distribution));
  MeshRun run{three_layer_mlp(16, 32, batch_norm), {}};
  run.model->compile({.optimizer = std::move(optimizer),
                      .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                      .metrics = {"sparse_categorical_accuracy"}});
  dist::set_distribution(nullptr);
  const LabelledRows data = labelled_rows(70);
  run.history = run.model->fit(data.x, data.y, {.epochs = 2, .batch_size = batch_size, .verbose = 0, .shuffle = false});
  return run;
}

void continue_training(models::Model& model, int epochs) {
  const LabelledRows data = labelled_rows(80);
  model.fit(data.x, data.y, {.epochs = epochs, .batch_size = 16, .verbose = 0, .shuffle = false});
}

dist::LayoutMap transformer_layouts(const dist::DeviceMesh& device_mesh) {
  dist::LayoutMap layouts(device_mesh);
  layouts[".*/(query|key|value)/kernel"] = {std::nullopt, "model", std::nullopt};
  layouts[".*/(query|key|value)/bias"] = {"model", std::nullopt};
  layouts[".*/attention_output/kernel"] = {"model", std::nullopt, std::nullopt};
  layouts[".*/feedforward_intermediate_dense/kernel"] = {std::nullopt, "model"};
  layouts[".*/feedforward_intermediate_dense/bias"] = {"model"};
  layouts[".*/feedforward_output_dense/kernel"] = {"model", std::nullopt};
  return layouts;
}

std::unique_ptr<models::Model> train_transformer(std::shared_ptr<dist::Distribution> distribution) {
  layers::set_random_seed(9);
  dist::set_distribution(std::move(distribution));
  Tensor x = layers::Input({6, 16});
  Tensor h = layers::TransformerEncoder(32, 4)(x);
  h = layers::TransformerEncoder(32, 4)(h);
  auto model = std::make_unique<models::Model>(x, layers::Dense(4, {.name = "head"})(h));
  // SGD, not Adam: the key projection's bias has a gradient of zero up to rounding (softmax
  // ignores a constant added to a row of scores), which Adam would turn into full steps
  // in directions that depend on summation order.
  model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.02}), .loss = "mse"});
  dist::set_distribution(nullptr);
  Generator gen(4);
  // 20 steps: 80 sequences in batches of 8, 2 epochs.
  model->fit(uniform(Shape{80, 6, 16}, gen, -1, 1), uniform(Shape{80, 6, 4}, gen, -1, 1),
             {.epochs = 2, .batch_size = 8, .verbose = 0, .shuffle = false});
  return model;
}

}  // namespace chorus::testing
