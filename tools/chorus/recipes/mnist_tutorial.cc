#include "tools/chorus/recipes/mnist_tutorial.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <regex>

namespace chorus::recipes {
namespace ch = chorus;

std::unique_ptr<models::Model> get_compiled_model() {
  Tensor inputs = ch::layers::Input({784});
  Tensor x = ch::layers::Dense(256, {.activation = "relu"})(inputs);
  x = ch::layers::Dense(256, {.activation = "relu"})(x);
  Tensor outputs = ch::layers::Dense(10)(x);
  auto model = std::make_unique<models::Model>(inputs, outputs);
  model->compile({.optimizer = ch::optimizers::Adam(),
                  .loss = ch::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                  .metrics = {ch::metrics::SparseCategoricalAccuracy()}});
  return model;
}

Tree to_float_batch(const Tree& batch, bool normalize) {
  Tensor x = ops::cast(batch[0].tensor(), kFloat32);
  if (normalize) x = ops::divide(x, scalar(255.0f));
  return Tree::list({x, batch[1]});
}

MnistDatasets get_dataset(const std::string& dir, int64_t batch_size, bool normalize, bool shuffle, uint64_t seed) {
  // The images stay uint8 (47 MB for 60,000, as Keras's load_data gives them); each batch
  // becomes float32 (/ 255 when normalising) as it is drawn, as Keras's tutorial does.
  auto flatten = [](const Tensor& images) { return ops::reshape(images, {images.dim(0), 784}); };  // a view
  const Tree train_split = datasets::mnist::load_data(dir, datasets::Split::kTrain);
  const Tree test_split = datasets::mnist::load_data(dir, datasets::Split::kTest);
  const Tensor x_train = flatten(train_split[0].tensor()), y_train = train_split[1].tensor();
  const Tensor x_test = flatten(test_split[0].tensor()), y_test = test_split[1].tensor();
  // Reserve 10,000 samples for validation: the last ones. Slices are views, not copies.
  const int64_t n = x_train.dim(0), n_train = std::max<int64_t>(n - 10000, 0);
  auto batches = [&](data::Dataset slices) {
    return slices.batch(batch_size).map([normalize](const Tree& batch) { return to_float_batch(batch, normalize); });
  };
  auto slices = [](const Tensor& x, const Tensor& y) {
    return data::Dataset::from_tensor_slices(Tree::list({x, y}));
  };
  data::Dataset train = slices(x_train.first_axis_slice(0, n_train), y_train.first_axis_slice(0, n_train));
  if (shuffle) train = train.shuffle(n_train, seed);
  return {.train = batches(train),
          .val = batches(slices(x_train.first_axis_slice(n_train, n), y_train.first_axis_slice(n_train, n))),
          .test = batches(slices(x_test, y_test))};
}

RestoredModel make_or_restore_model(const std::string& checkpoint_dir) {
  RestoredModel latest;
  if (!checkpoint_dir.empty() && std::filesystem::is_directory(checkpoint_dir)) {
    static const std::regex pattern("ckpt-([0-9]+)\\.keras");
    for (const auto& checkpoint : std::filesystem::directory_iterator(checkpoint_dir)) {
      std::smatch match;
      const std::string name = checkpoint.path().filename().string();
      if (std::regex_match(name, match, pattern) && std::stoi(match[1]) > latest.epoch) {
        latest.epoch = std::stoi(match[1]);
        latest.path = checkpoint.path().string();
      }
    }
  }
  latest.model = latest.path.empty() ? get_compiled_model() : models::load_model(latest.path);
  return latest;
}

std::shared_ptr<distribution::DataParallel> make_strategy(int devices) {
  std::vector<Device> local = chorus::list_devices();
  if (devices > 0) {
    for (int i = 0; i < devices; ++i) chorus::check_device(Device::cpu(i));
    local.resize(static_cast<size_t>(devices));
  }
  const cluster::ClusterSpec cluster = cluster::discover_cluster();
  return cluster.multi_worker() ? distribute::MultiWorkerMirroredStrategy(cluster, local).distribution()
                                : distribute::MirroredStrategy(local).distribution();
}

MnistTutorialResult run_training(const MnistDatasets& data, const MnistTutorialOptions& options,
                                 const distribution::DataParallel& strategy, bool evaluate) {
  // Open a strategy scope and create/restore the model (compiling there makes it train
  // on the strategy's replicas).
  auto scope = strategy.scope();
  RestoredModel restored = make_or_restore_model(options.checkpoint_dir);
  if (!restored.path.empty() && options.verbose > 0) {
    std::cout << "Restored " << restored.path << " (epoch " << restored.epoch << ")\n";
  }
  // This callback saves the model every epoch. We include the current epoch in the file name.
  std::vector<Shared<models::Callback>> callbacks;
  if (!options.checkpoint_dir.empty()) {
    std::filesystem::create_directories(options.checkpoint_dir);
    callbacks.push_back(callbacks::ModelCheckpoint(options.checkpoint_dir + "/ckpt-{epoch}.keras"));
  }
  PhaseTimes* timings = options.timings;
  if (timings != nullptr) callbacks.push_back(timings->validation_timer());
  models::Model& model = *restored.model;
  apply_jit_compile(model, options.run);
  MnistTutorialResult result{.restored_from = restored.path};
  result.history = timed(timings ? &timings->fit_s : nullptr, [&] {
    return model.fit(data.train, {.epochs = restored.epoch + options.epochs,
                                  .verbose = options.verbose,
                                  .callbacks = with_run_callbacks(callbacks, options.run),
                                  .validation_data = data.val,
                                  .initial_epoch = restored.epoch});
  });
  save_final_weights(model, options.run);
  if (evaluate) {
    result.test_logs = timed(timings ? &timings->evaluate_s : nullptr,
                             [&] { return model.evaluate(data.test, {.verbose = options.verbose}); });
  }
  return result;
}

MnistTutorialResult run_training(const MnistDatasets& data, const MnistTutorialOptions& options) {
  return run_training(data, options, *make_strategy(options.devices));
}

MnistTutorialResult run_mnist_tutorial(const MnistTutorialOptions& options) {
  layers::set_random_seed(options.seed);  // the same initial weights every run
  const MnistDatasets data = timed(options.timings ? &options.timings->data_s : nullptr, [&] {
    return get_dataset(options.data_dir, options.batch_size, options.normalize, options.shuffle, options.seed);
  });
  const std::shared_ptr<distribution::DataParallel> strategy = make_strategy(options.devices);
  if (options.verbose > 0) std::cout << "Number of devices: " << strategy->num_replicas() << "\n";
  return run_training(data, options, *strategy, /*evaluate=*/true);
}

}  // namespace chorus::recipes
