// `chorus train RECIPE`: runs a seed tutorial as a built-in recipe.
#include <memory>

#include "examples/mnist_tutorial.h"
#include "tools/chorus/commands.h"

namespace chorus::cli {

void add_train_command(CLI::App& app) {
  CLI::App* train = app.add_subcommand("train", "Train a built-in recipe (a seed tutorial)");
  train->require_subcommand(1);

  auto options = std::make_shared<examples::MnistTutorialOptions>();
  CLI::App* mnist = train->add_subcommand(
      "mnist-mlp", "The Keras MNIST tutorial: MLP 784-256-256-10, Adam, batch 64, checkpoint per epoch");
  mnist->add_option("--data", options->data_dir,
                    "Directory with the four MNIST (or Fashion-MNIST) IDX files (default: Debian's Fashion-MNIST)");
  mnist->add_option("--epochs", options->epochs, "Epochs to train")->check(CLI::PositiveNumber);
  mnist->add_option("--batch-size", options->batch_size, "Global batch size")->check(CLI::PositiveNumber);
  mnist->add_option("--checkpoint-dir", options->checkpoint_dir,
                    "Save ckpt-<epoch>.keras here every epoch and resume from the latest one");
  mnist->add_flag("--normalize", options->normalize, "Divide pixels by 255 (the tutorial trains on raw 0-255)");
  mnist->add_flag("--shuffle", options->shuffle, "Reshuffle the training set every epoch (the tutorial does not)");
  mnist->add_option("--verbose", options->verbose, "0 silent, 1 progress bar, 2 one line per epoch");
  mnist->add_option("--seed", options->seed, "Seed of the validation split and the initial weights");
  mnist->callback([options] {
    examples::get_compiled_model()->summary();
    layers::Layer::reset_names();
    examples::run_mnist_tutorial(*options);
  });
}

}  // namespace chorus::cli
