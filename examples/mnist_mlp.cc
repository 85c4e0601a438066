// The Keras guide "Multi-GPU distributed training" (MirroredStrategy on MNIST, then fault
// tolerance), ../shared/seeds/keras-mirrored-strategy-mnist-fault-tolerance.txt, in C++.
//
//   mnist_mlp [DATA_DIR] [CHECKPOINT_DIR]
//
// DATA_DIR holds the four MNIST IDX files (../shared/data/mnist); by default Debian's
// Fashion-MNIST. CHECKPOINT_DIR defaults to ./ckpt and is cleared first.
//
// The tutorial's functions (get_compiled_model, get_dataset, make_or_restore_model,
// run_training) are in tools/chorus/recipes/mnist_tutorial.cc, which `chorus train
// mnist-mlp` runs too; this file is the tutorial's script, in its order.
#include <filesystem>
#include <iostream>

#include "chorus/chorus.h"
#include "tools/chorus/recipes/mnist_tutorial.h"

namespace ch = chorus;
namespace fs = std::filesystem;
using ch::recipes::get_compiled_model, ch::recipes::get_dataset, ch::recipes::run_training;

int main(int argc, char** argv) try {
  const std::string data_dir = argc > 1 ? argv[1] : ch::datasets::fashion_mnist::kDebianDir;
  // Create a MirroredStrategy.
  ch::distribute::MirroredStrategy strategy;
  std::cout << "Number of devices: " << strategy.num_replicas_in_sync() << "\n";
  // Batches of 64 flattened images; the last 10,000 training images validate.
  const ch::recipes::MnistDatasets data = get_dataset(data_dir);
  {
    // Open a strategy scope. Everything that creates variables should be under the
    // strategy scope. In general this is only model construction & compile().
    auto scope = strategy.scope();
    auto model = get_compiled_model();  // MLP 784-256-256-10, Adam, cross-entropy from logits
    model->summary();
    // Train the model on all available devices.
    model->fit(data.train, {.epochs = 2, .validation_data = data.val});
    // Test the model on all available devices.
    model->evaluate(data.test);
  }
  // Fault tolerance: prepare a directory to store all the checkpoints.
  const fs::path checkpoint_dir = argc > 2 ? argv[2] : "ckpt";
  fs::remove_all(checkpoint_dir);
  fs::create_directories(checkpoint_dir);
  // run_training: a MirroredStrategy, make_or_restore_model (the latest ckpt-<epoch>.keras,
  // or a fresh model) in its scope, then fit with a ModelCheckpoint every epoch.
  const ch::recipes::MnistTutorialOptions options{.epochs = 1, .verbose = 2, .checkpoint_dir = checkpoint_dir};
  // Running the first time creates the model.
  run_training(data, options);
  // Calling the same function again resumes from where we left off.
  run_training(data, options);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "mnist_mlp: " << e.what() << "\n";
  return 1;
}
