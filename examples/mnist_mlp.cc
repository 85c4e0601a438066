// The Keras MNIST tutorial in C++: trains the 784-256-256-10 MLP for 2 epochs with a
// checkpoint per epoch, evaluates it, then — as the tutorial's fault-tolerance part —
// restores the latest checkpoint and trains one more epoch.
//
//   mnist_mlp [DATA_DIR] [CHECKPOINT_DIR]
//
// DATA_DIR holds the four MNIST IDX files (../shared/data/mnist); by default Debian's
// Fashion-MNIST. CHECKPOINT_DIR defaults to ./ckpt and is cleared first.
#include <filesystem>
#include <iostream>

#include "tools/chorus/recipes/mnist_tutorial.h"

int main(int argc, char** argv) {
  namespace ex = chorus::recipes;
  try {
    ex::MnistTutorialOptions options;
    if (argc > 1) options.data_dir = argv[1];
    options.checkpoint_dir = argc > 2 ? argv[2] : "ckpt";
    std::filesystem::remove_all(options.checkpoint_dir);
    ex::get_compiled_model()->summary();
    ex::run_mnist_tutorial(options);
    // Running again restores the latest checkpoint and continues from its epoch.
    options.epochs += 1;
    ex::run_mnist_tutorial(options);
  } catch (const std::exception& e) {
    std::cerr << "mnist_mlp: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
