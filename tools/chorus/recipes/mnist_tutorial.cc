#include "tools/chorus/recipes/mnist_tutorial.h"

#include <algorithm>
#include <cstring>
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

namespace {

// Rows `indices` of `t`, in that order.
Tensor rows(const Tensor& t, const std::vector<int32_t>& indices) {
  return ops::take(t, from_values<int32_t>(indices, Shape{static_cast<int64_t>(indices.size())}), 0);
}

// Moves rows `keep` (sorted, distinct) of `t` to its front in order, in place, and
// returns a view of them: each row moves to an index at or below its own.
Tensor keep_rows_in_place(const Tensor& t, const std::vector<int32_t>& keep) {
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(t.dim(0));
  auto* base = static_cast<char*>(t.raw_data());
  for (size_t i = 0; i < keep.size(); ++i) {
    std::memmove(base + i * row_bytes, base + static_cast<size_t>(keep[i]) * row_bytes, row_bytes);
  }
  return t.first_axis_slice(0, static_cast<int64_t>(keep.size()));
}

}  // namespace

MnistDatasets get_dataset(const std::string& dir, int64_t batch_size, bool normalize, uint64_t seed, bool shuffle) {
  auto flatten = [&](const Tensor& images) {
    Tensor flat = ops::reshape(images, {images.dim(0), 784});
    return normalize ? ops::divide(flat, scalar(255.0f)) : flat;
  };
  Tensor x_train, y_train, x_test, y_test;
  {
    Tree train = datasets::mnist::load_data(dir, datasets::Split::kTrain);
    x_train = flatten(train[0].tensor());
    y_train = train[1].tensor();
  }  // the raw images go here when normalising: one 188 MB copy alive, not two
  {
    Tree test = datasets::mnist::load_data(dir, datasets::Split::kTest);
    x_test = flatten(test[0].tensor());
    y_test = test[1].tensor();
  }
  // val_i <- sample.int(nrow(x_train), 10000): a seeded random choice of 10,000 rows.
  int64_t n = x_train.dim(0);
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  Generator gen(seed);
  Tensor draws = uniform(Shape{n}, gen);
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(draws.data<float>()[i] * static_cast<float>(i + 1));
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(std::min(j, i))]);
  }
  std::vector<int32_t> val(order.begin(), order.begin() + std::min<int64_t>(10000, n));
  std::vector<int32_t> keep(order.begin() + static_cast<int64_t>(val.size()), order.end());
  std::sort(val.begin(), val.end());
  std::sort(keep.begin(), keep.end());
  Tensor x_val = rows(x_train, val), y_val = rows(y_train, val);
  // x_train[-val_i,] without a second copy of the training set.
  x_train = keep_rows_in_place(x_train, keep);
  y_train = keep_rows_in_place(y_train, keep);
  auto batched = [&](const Tensor& x, const Tensor& y) {
    return data::Dataset::from_tensor_slices(Tree::list({x, y})).batch(batch_size);
  };
  data::Dataset train_set = data::Dataset::from_tensor_slices(Tree::list({x_train, y_train}));
  if (shuffle) train_set = train_set.shuffle(static_cast<int64_t>(keep.size()), seed);
  return {train_set.batch(batch_size), batched(x_val, y_val), batched(x_test, y_test)};
}

std::pair<std::string, int> latest_checkpoint(const std::string& checkpoint_dir) {
  std::pair<std::string, int> latest{"", 0};
  if (!std::filesystem::is_directory(checkpoint_dir)) return latest;
  static const std::regex pattern("ckpt-([0-9]+)\\.keras");
  for (const auto& entry : std::filesystem::directory_iterator(checkpoint_dir)) {
    std::smatch match;
    std::string name = entry.path().filename().string();
    if (std::regex_match(name, match, pattern) && std::stoi(match[1]) > latest.second) {
      latest = {entry.path().string(), std::stoi(match[1])};
    }
  }
  return latest;
}

MnistTutorialResult run_mnist_tutorial(const MnistTutorialOptions& options) {
  layers::set_random_seed(options.seed);  // the same initial weights every run
  MnistDatasets data =
      get_dataset(options.data_dir, options.batch_size, options.normalize, options.seed, options.shuffle);
  MnistTutorialResult result;
  std::vector<Device> devices = chorus::list_devices();
  if (options.devices > 0) {
    for (int i = 0; i < options.devices; ++i) chorus::check_device(Device::cpu(i));
    devices.resize(static_cast<size_t>(options.devices));
  }
  // Under a launcher (chorus launch, torchrun, mpirun, Slurm, TF_CONFIG) the tutorial's
  // multi-worker variant: MultiWorkerMirroredStrategy over the same local devices.
  const cluster::ClusterSpec cluster = cluster::discover_cluster();
  const std::shared_ptr<distribution::DataParallel> strategy =
      cluster.multi_worker() ? distribute::MultiWorkerMirroredStrategy(cluster, devices).distribution()
                             : distribute::MirroredStrategy(devices).distribution();
  if (options.verbose > 0) std::cout << "Number of devices: " << strategy->num_replicas() << "\n";
  // make_or_restore_model(): either restore the latest model, or create a fresh one, in
  // the strategy's scope (compiling there makes the model train on its replicas).
  auto scope = strategy->scope();
  std::unique_ptr<models::Model> model;
  int initial_epoch = 0;
  std::vector<Shared<models::Callback>> callbacks;
  if (!options.checkpoint_dir.empty()) {
    auto [path, epoch] = latest_checkpoint(options.checkpoint_dir);
    if (!path.empty()) {
      model = models::load_model(path);
      result.restored_from = path;
      initial_epoch = epoch;
      if (options.verbose > 0) std::cout << "Restored " << path << " (epoch " << epoch << ")\n";
    }
    std::filesystem::create_directories(options.checkpoint_dir);
    callbacks.push_back(callbacks::ModelCheckpoint(options.checkpoint_dir + "/ckpt-{epoch}.keras"));
  }
  if (!model) model = get_compiled_model();
  result.history = model->fit(data.train, {.epochs = options.epochs, .verbose = options.verbose,
                                           .callbacks = with_backup(callbacks, options.fault_tolerance),
                                           .validation_data = data.val,
                                           .initial_epoch = initial_epoch});
  save_final_weights(*model, options.fault_tolerance);
  result.test_logs = model->evaluate(data.test, {.verbose = options.verbose});
  return result;
}

}  // namespace chorus::recipes
