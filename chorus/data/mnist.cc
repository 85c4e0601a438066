#include "chorus/data/mnist.h"

#include <filesystem>

#include "chorus/core/error.h"
#include "chorus/data/idx.h"

namespace chorus::datasets {
namespace {

// `dir`/`name` if it exists (already inflated: it reads at the disk's speed, faster than
// inflating even with libdeflate), else `dir`/`name`.gz.
std::string find_file(const std::string& dir, const std::string& name) {
  const std::filesystem::path plain = std::filesystem::path(dir) / name;
  std::error_code ec;
  if (std::filesystem::exists(plain, ec)) return plain.string();
  const std::filesystem::path gz = std::filesystem::path(dir) / (name + ".gz");
  if (std::filesystem::exists(gz, ec)) return gz.string();
  throw_error<IOError>("{}: cannot open: No such file or directory (nor {} without .gz)", gz.string(), name);
}

Tree load_idx_pair(const std::string& dir, Split split) {
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  Tensor images = data::read_idx(images_path, kUInt8);
  Tensor labels = data::read_idx(labels_path, kInt32);
  if (images.rank() != 3) {
    throw_error<IOError>("{}: expected images of rank 3 (count, rows, cols), found dims {}", images_path,
                         images.shape().to_string());
  }
  if (labels.rank() != 1 || labels.dim(0) != images.dim(0)) {
    throw_error<IOError>("{}: expected {} labels (one per image in {}), found dims {}", labels_path, images.dim(0),
                         images_path, labels.shape().to_string());
  }
  return Tree::list({images, labels});
}

}  // namespace

namespace mnist {

Tree load_data(const std::string& dir, Split split) { return load_idx_pair(dir, split); }

data::Dataset dataset(const std::string& dir, Split split) {
  return data::Dataset::from_tensor_slices(load_data(dir, split));
}

}  // namespace mnist

namespace fashion_mnist {

Tree load_data(const std::string& dir, Split split) { return load_idx_pair(dir, split); }

data::Dataset dataset(const std::string& dir, Split split) {
  return data::Dataset::from_tensor_slices(load_data(dir, split));
}

}  // namespace fashion_mnist

}  // namespace chorus::datasets
