// MNIST and Fashion-MNIST from their four IDX files in a directory the user has (or that
// `chorus data fetch` filled): keras.datasets.mnist.load_data with an explicit directory.
// Stateless functions; thread-safe.
#pragma once

#include <string>

#include "chorus/core/tree.h"
#include "chorus/data/dataset.h"

namespace chorus::datasets {

enum class Split { kTrain, kTest };

namespace mnist {

// The split's images and labels as a two-element list Tree:
//   [images (N, 28, 28) uint8 with the raw 0-255 pixel values, labels (N,) int32 0-9]
// The images are uint8 as Keras's (47 MB for kTrain, not 188 MB of float32): convert per
// batch, as the Keras tutorials do (see tools/chorus/recipes/mnist_tutorial.cc):
//   ds.batch(64).map([](const Tree& b) { return Tree::list({ops::cast(b[0].tensor(), kFloat32), b[1]}); })
// N is 60,000 for kTrain and 10,000 for kTest. Reads `dir`/train-images-idx3-ubyte and
// train-labels-idx1-ubyte (t10k-... for kTest), each with ".gz" when only that exists
// (inflating the gzipped train images takes most of the time: `gunzip -k` them once to
// load at the disk's speed).
// Throws IOError if a file is missing or malformed, or if the counts of images and
// labels differ.
//   Tree train = mnist::load_data("../shared/data/mnist");
//   const Tensor& x = train[0].tensor();  // (60000, 28, 28)
Tree load_data(const std::string& dir, Split split = Split::kTrain);

// Dataset::from_tensor_slices(load_data(dir, split)): elements are
// [image (28, 28) uint8, label () int32] pairs.
data::Dataset dataset(const std::string& dir, Split split = Split::kTrain);

}  // namespace mnist

namespace fashion_mnist {

// Where Debian's dataset-fashion-mnist package installs the files.
inline constexpr const char* kDebianDir = "/usr/share/datasets/fashion-mnist";

// As mnist::load_data (the same file names and layout; labels are the 10 clothing classes).
Tree load_data(const std::string& dir = kDebianDir, Split split = Split::kTrain);
data::Dataset dataset(const std::string& dir = kDebianDir, Split split = Split::kTrain);

}  // namespace fashion_mnist

}  // namespace chorus::datasets
