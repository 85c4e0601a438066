// The small models the model-parallel and fully sharded tests train on a mesh of logical
// CPU devices and on one device: an MLP with its labelled rows and Megatron layouts, and
// two Transformer encoder layers. Each call builds afresh; call from the test's thread
// (compiling sets the process's distribution for a moment).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chorus/chorus.h"

namespace chorus::testing {

namespace dist = chorus::distribution;

std::vector<Device> mesh_devices(int n);
// A (batch, model) mesh of axes "batch" and "model" over the first batch * model devices.
dist::DeviceMesh mesh(int64_t batch, int64_t model);

// Megatron's MLP block: `first`'s kernel split by columns, `second`'s by rows (one
// all-reduce); the other layer replicated. With d2 and d3 the block's input comes from a
// replicated layer, whose gradient then is the all-reduce of the devices' partial ones.
dist::LayoutMap megatron_layouts(const dist::DeviceMesh& device_mesh, const std::string& first = "d1",
                                 const std::string& second = "d2");

// Dense layers d1 (relu), d2 (8, tanh) and d3 (3 logits). `batch_norm`: with
// BatchNormalization after d1 (each batch position normalises by its own rows'
// statistics, as data-parallel replicas do).
std::unique_ptr<models::Model> three_layer_mlp(int64_t inputs = 16, int64_t hidden = 32, bool batch_norm = false);

struct LabelledRows {
  Tensor x, y;
};
// `n` uniform rows and, as label, the index of the largest of their first three features.
LabelledRows labelled_rows(int64_t n, int64_t features = 16);

struct MeshRun {
  std::unique_ptr<models::Model> model;
  models::History history;
};

// three_layer_mlp() compiled under `distribution` (nullptr: one device), then 2 epochs
// over 70 rows in batches of 16 (the last has 6): 10 steps.
MeshRun train_three_layer_mlp(std::shared_ptr<dist::Distribution> distribution,
                              Shared<optimizers::Optimizer> optimizer = "adam", bool batch_norm = false,
                              int64_t batch_size = 16);

// Trains `model` `epochs` epochs more on the same 80 rows (5 batches of 16, unshuffled).
void continue_training(models::Model& model, int epochs);

// Two Transformer encoder layers, Megatron-style: attention heads split over the model
// axis (query, key and value kernels by heads, the output projection by its heads rows:
// one all-reduce), the feedforward block by columns then rows (one all-reduce).
dist::LayoutMap transformer_layouts(const dist::DeviceMesh& device_mesh);
// The two encoder layers and a Dense head compiled under `distribution`, trained 20 SGD steps.
std::unique_ptr<models::Model> train_transformer(std::shared_ptr<dist::Distribution> distribution);

}  // namespace chorus::testing
