// The checkpoints the checkpoint fuzzer damages: a compiled functional model and a
// compiled Sequential one, each trained one step (so optimizer.safetensors exists), saved
// by chorus itself. Shared by checkpoint_fuzzer and checkpoint_seeds.
#pragma once

#include <filesystem>
#include <memory>

#include "chorus/chorus.h"

namespace chorus::fuzz {

// The files of a saved model that the fuzzer replaces, in selector order.
inline constexpr const char* kCheckpointFiles[] = {"config.json", "state.json", "model.weights.safetensors",
                                                   "optimizer.safetensors"};

// Saves the functional (`sequential` false) or Sequential base checkpoint into `dir`.
inline void save_base_checkpoint(const std::filesystem::path& dir, bool sequential) {
  std::unique_ptr<models::Model> model;
  if (sequential) {
    model = std::make_unique<models::Sequential>(std::vector<Shared<layers::Layer>>{
        layers::InputLayer({4}), layers::Dense(3, {.activation = "relu"}), layers::Dropout(0.5), layers::Dense(2)});
  } else {
    Tensor x = layers::Input({4});
    Tensor h = layers::Dense(3, {.activation = "relu"})(x);
    Tensor y = layers::Add()(Tree::list({layers::Dense(2)(h), layers::Dense(2)(h)})).tensor();
    model = std::make_unique<models::Model>(x, y);
  }
  model->compile({.optimizer = optimizers::Adam(0.01),
                  .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {metrics::SparseCategoricalAccuracy()}});
  Tensor x = zeros(Shape{2, 4});
  Tensor y = zeros(Shape{2}, kInt32);
  model->fit(x, y, {.batch_size = 2, .verbose = 0});
  model->save(dir);
}

}  // namespace chorus::fuzz
