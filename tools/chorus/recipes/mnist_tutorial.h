// The Keras MNIST fault-tolerance tutorial's functions, with options: examples/mnist_mlp.cc
// calls them in the tutorial's order and `chorus train mnist-mlp` runs them with flags, so
// both train the same model on the same split. Results are values the caller owns. Call from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "chorus/chorus.h"
#include "tools/chorus/recipes/run_options.h"
#include "tools/chorus/recipes/phase_times.h"

namespace chorus::recipes {

// The tutorial's get_compiled_model(): MLP 784-256-256-10, Adam, sparse categorical
// cross-entropy from logits, sparse categorical accuracy.
std::unique_ptr<models::Model> get_compiled_model();

struct MnistDatasets {
  data::Dataset train, val, test;
};
// The tutorial's get_dataset(): the last 10,000 training images are the validation set
// (as the guide's Python version; the R one draws them at random), the other 50,000
// train in their stored order; pixels flattened to 784 raw 0-255 floats (divided by 255
// with `normalize`). The datasets hold load_data's uint8 images and convert each batch
// (to_float_batch, a map after batch). With `shuffle` the training set is reshuffled
// every epoch from `seed` (the tutorial does not).
MnistDatasets get_dataset(const std::string& dir, int64_t batch_size = 64, bool normalize = false,
                          bool shuffle = false, uint64_t seed = 42);

// A batch [images (B, ...) uint8, labels] as [images float32, labels], the pixels divided
// by 255 with `normalize`: get_dataset's per-batch map.
Tree to_float_batch(const Tree& batch, bool normalize);

// The tutorial's make_or_restore_model(): the latest "ckpt-<epoch>.keras" in
// `checkpoint_dir` loaded, or a fresh get_compiled_model() (path "", epoch 0) when there
// is none or `checkpoint_dir` is empty. Call in the strategy's scope.
struct RestoredModel {
  std::unique_ptr<models::Model> model;
  std::string path;  // the checkpoint it came from, or ""
  int epoch = 0;     // the epochs that checkpoint had trained
};
RestoredModel make_or_restore_model(const std::string& checkpoint_dir);

struct MnistTutorialOptions {
  // get_dataset's arguments (run_mnist_tutorial only).
  std::string data_dir = datasets::fashion_mnist::kDebianDir;  // MNIST's or Fashion-MNIST's IDX files
  int64_t batch_size = 64;
  bool normalize = false;
  // Reshuffles the training set each epoch. The tutorial does not; without it, MNIST's
  // stored order caps normalised-pixel test accuracy near 0.967 (PyTorch's peer run
  // gets 0.9667 the same way).
  bool shuffle = false;
  uint64_t seed = 42;  // the shuffle's and (run_mnist_tutorial) the initial weights'
  // run_training's: epochs to train in this run, after those a restored checkpoint had.
  int epochs = 2;
  int verbose = 1;
  // Saves ckpt-<epoch>.keras there every epoch and, on start, restores the latest one
  // and continues from its epoch (make_or_restore_model). Empty: no checkpoints.
  std::string checkpoint_dir;
  // Replicas of the MirroredStrategy: 0 for every local device (the tutorial's
  // MirroredStrategy()), else the first `devices`.
  int devices = 0;
  RunOptions run;
  // Where the run's phases add their seconds (chorus train --timings); null: not timed.
  PhaseTimes* timings = nullptr;
};

struct MnistTutorialResult {
  models::History history;
  models::Logs test_logs;     // empty unless evaluated
  std::string restored_from;  // the checkpoint training resumed from, if any
};

// The strategy the tutorial trains under: MirroredStrategy over `devices` (0: every
// local one), or under a launcher (chorus launch, torchrun, mpirun, Slurm, TF_CONFIG) its
// multi-worker variant, MultiWorkerMirroredStrategy over the same local devices.
std::shared_ptr<distribution::DataParallel> make_strategy(int devices);

// The tutorial's run_training(): in `strategy`'s scope, make_or_restore_model, fit
// options.epochs more epochs (validating on data.val, a checkpoint per epoch when
// options.checkpoint_dir is set), then evaluate on data.test when `evaluate`.
MnistTutorialResult run_training(const MnistDatasets& data, const MnistTutorialOptions& options,
                                 const distribution::DataParallel& strategy, bool evaluate = false);
// As above under a fresh make_strategy(options.devices), as the tutorial's run_training.
MnistTutorialResult run_training(const MnistDatasets& data, const MnistTutorialOptions& options);

// `chorus train mnist-mlp`: seeds the weights, loads get_dataset(options...), prints
// "Number of devices: N", then run_training with evaluation on the test set.
MnistTutorialResult run_mnist_tutorial(const MnistTutorialOptions& options);

}  // namespace chorus::recipes
