// The Keras distribution guide's ModelParallel program in C++: a (2, 4) mesh over 8
// logical CPU devices — two data-parallel replicas of a model whose first Dense kernel is
// split four ways — trained 3 epochs on random data, then the same steps re-run on one
// device to show they agree, with each device's share of the weights and optimizer state.
#include <cstdio>
#include <iostream>

#include "chorus/chorus.h"

namespace ch = chorus;
namespace dist = chorus::distribution;

std::unique_ptr<ch::Model> make_model() {
  ch::Tensor inputs = ch::layers::Input({28, 28, 1});
  ch::Tensor y = ch::layers::Flatten()(inputs);
  y = ch::layers::Dense(200, {.activation = "relu", .use_bias = false, .name = "d1"})(y);
  y = ch::layers::Dropout(0.4)(y);
  y = ch::layers::Dense(10, {.activation = "softmax", .name = "d2"})(y);
  return std::make_unique<ch::Model>(inputs, y);
}

int main() try {
  ch::set_cpu_devices(8);  // as LogicalDeviceConfiguration: 8 devices on this CPU
  dist::DeviceMesh mesh_2d({2, 4}, {"data", "model"}, ch::devices());
  dist::LayoutMap layout_map(mesh_2d);
  // d1's kernel is split over the model axis (4 devices); every other weight is replicated.
  layout_map["d1/kernel"] = {std::nullopt, "model"};
  layout_map["d1/bias"] = {"model"};
  layout_map["d2/output"] = {"data", std::nullopt};  // the layer output's layout
  dist::ModelParallel model_parallel(layout_map, /*batch_dim_name=*/"data");

  ch::Generator gen(0);
  const ch::Tensor x = ch::normal({128, 28, 28, 1}, gen), y = ch::normal({128, 10}, gen);
  const auto dataset = ch::data::Dataset::from_tensor_slices(ch::Tree::list({x, y})).batch(16);

  ch::layers::set_random_seed(1);
  std::unique_ptr<ch::Model> model;
  {
    auto scope = model_parallel.scope();  // `with model_parallel.scope():`
    model = make_model();
    model->compile({.loss = "mse"});  // the data is split over the "data" axis of 2 devices
  }
  model->fit(dataset, {.epochs = 3});
  model->evaluate(dataset);

  ch::layers::set_random_seed(1);
  auto one_device = make_model();
  one_device->compile({.loss = "mse"});
  one_device->fit(dataset, {.epochs = 3, .verbose = 0});
  const ch::models::StateBytes bytes = ch::models::state_bytes(*model);
  std::printf("max_relative_difference_vs_one_device: %.3g\n",
              ch::models::max_relative_difference(model->weights(), one_device->weights()));
  std::printf("parameter_bytes_per_device: %lld of %lld\n", static_cast<long long>(bytes.largest()),
              static_cast<long long>(bytes.whole));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "model_parallel: " << e.what() << "\n";
  return 1;
}
