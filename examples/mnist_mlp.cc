// The Keras guide "Multi-GPU distributed training" (MirroredStrategy on MNIST, then fault
// tolerance), ../shared/seeds/keras-mirrored-strategy-mnist-fault-tolerance.txt, in C++.
//
//   mnist_mlp [DATA_DIR] [CHECKPOINT_DIR]
//
// DATA_DIR holds the four MNIST IDX files (../shared/data/mnist); by default Debian's
// Fashion-MNIST. CHECKPOINT_DIR defaults to ./ckpt and is cleared first.
#include <filesystem>
#include <iostream>
#include <regex>

#include "chorus/chorus.h"

namespace ch = chorus;
namespace fs = std::filesystem;

std::unique_ptr<ch::Model> get_compiled_model() {
  auto inputs = ch::Input({784});
  auto x = ch::layers::Dense(256, {.activation = "relu"})(inputs);
  x = ch::layers::Dense(256, {.activation = "relu"})(x);
  auto outputs = ch::layers::Dense(10)(x);
  auto model = std::make_unique<ch::Model>(inputs, outputs);
  model->compile({.optimizer = ch::optimizers::Adam(),
                  .loss = ch::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {ch::metrics::SparseCategoricalAccuracy()}});
  return model;
}

struct Datasets {
  ch::data::Dataset train, val, test;
};

Datasets get_dataset(const std::string& dir, int64_t batch_size = 64) {
  namespace mnist = ch::datasets::mnist;
  ch::Tree train = mnist::load_data(dir, ch::datasets::Split::kTrain);
  ch::Tree test = mnist::load_data(dir, ch::datasets::Split::kTest);
  auto x_train = ch::ops::reshape(train[0].tensor(), {-1, 784}), y_train = train[1].tensor();
  auto x_test = ch::ops::reshape(test[0].tensor(), {-1, 784}), y_test = test[1].tensor();
  // Reserve 10,000 samples for validation: the last ones, as the guide's Python version
  // does (the R one draws them at random). Slices are views: the images are not copied.
  const int64_t n = x_train.dim(0), n_train = n - 10000;
  auto dataset = [&](const ch::Tensor& x, const ch::Tensor& y) {
    return ch::data::Dataset::from_tensor_slices(ch::Tree::list({x, y})).batch(batch_size);
  };
  // Prepare the training, validation and test datasets.
  return {.train = dataset(x_train.first_axis_slice(0, n_train), y_train.first_axis_slice(0, n_train)),
          .val = dataset(x_train.first_axis_slice(n_train, n), y_train.first_axis_slice(n_train, n)),
          .test = dataset(x_test, y_test)};
}

// Either restore the latest model, or create a fresh one if there is no checkpoint
// available. Returns the model and the epoch it has trained to.
std::pair<std::unique_ptr<ch::Model>, int> make_or_restore_model(const fs::path& checkpoint_dir) {
  fs::path latest_checkpoint;
  int latest_epoch = 0;
  for (const auto& checkpoint : fs::directory_iterator(checkpoint_dir)) {
    std::smatch match;
    const std::string name = checkpoint.path().filename().string();
    if (std::regex_match(name, match, std::regex("ckpt-([0-9]+)\\.keras")) && std::stoi(match[1]) > latest_epoch) {
      latest_epoch = std::stoi(match[1]);
      latest_checkpoint = checkpoint.path();
    }
  }
  if (latest_checkpoint.empty()) return {get_compiled_model(), 0};
  return {ch::load_model(latest_checkpoint), latest_epoch};
}

void run_training(const Datasets& data, const fs::path& checkpoint_dir, int epochs = 1) {
  // Create a MirroredStrategy.
  ch::distribute::MirroredStrategy strategy;
  // Open a strategy scope and create/restore the model.
  auto scope = strategy.scope();
  auto [model, initial_epoch] = make_or_restore_model(checkpoint_dir);
  // This callback saves the model every epoch. We include the current epoch in the file name.
  std::vector<ch::Shared<ch::models::Callback>> callbacks = {
      ch::callbacks::ModelCheckpoint((checkpoint_dir / "ckpt-{epoch}.keras").string())};
  model->fit(data.train, {.epochs = initial_epoch + epochs, .verbose = 2, .callbacks = callbacks,
                          .validation_data = data.val, .initial_epoch = initial_epoch});
}

int main(int argc, char** argv) try {
  const std::string data_dir = argc > 1 ? argv[1] : ch::datasets::fashion_mnist::kDebianDir;
  // Create a MirroredStrategy.
  ch::distribute::MirroredStrategy strategy;
  std::cout << "Number of devices: " << strategy.num_replicas_in_sync() << "\n";
  const Datasets data = get_dataset(data_dir);
  {
    // Open a strategy scope. Everything that creates variables should be under the
    // strategy scope. In general this is only model construction & compile().
    auto scope = strategy.scope();
    auto model = get_compiled_model();
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
  // Running the first time creates the model.
  run_training(data, checkpoint_dir, /*epochs=*/1);
  // Calling the same function again resumes from where we left off.
  run_training(data, checkpoint_dir, /*epochs=*/1);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "mnist_mlp: " << e.what() << "\n";
  return 1;
}
