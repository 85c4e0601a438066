// LayoutMap: which TensorLayout each variable (or layer output) gets under ModelParallel,
// keyed by path patterns (keras.distribution.LayoutMap). A path takes the layout of a key
// equal to it, else of the one key whose regular expression (RE2) matches the whole path;
// none means replicated. Unlike Keras, a key that matches nothing is an error by default
// (ModelParallelOptions::ignore_unmatched_layout_keys). Built on one thread, then read-only.
//
//   LayoutMap layout_map(mesh);
//   layout_map["d1/kernel"] = {std::nullopt, "model"};
//   layout_map["d1/bias"] = {"model"};
#pragma once

#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chorus/distribution/distribution.h"

namespace chorus::distribution {

class LayoutMap {
 public:
  explicit LayoutMap(DeviceMesh device_mesh) : device_mesh_(std::move(device_mesh)) {}

  // The layout stored under `key` (a new, empty one at first), to assign to.
  TensorLayout& operator[](const std::string& key);
  // The layout for `path`, or nullopt. Throws ValueError when several keys match it
  // ("'d1/kernel' matches more than one key of the LayoutMap: 'd1/.*' and '.*/kernel'"),
  // or when a key is not a valid regular expression.
  std::optional<TensorLayout> get(const std::string& path) const;

  // The keys, in insertion order, that give no path of `paths` its layout: neither equal
  // to one nor a regular expression matching one whole. ModelParallel refuses a model for
  // which any remains (a renamed layer would otherwise stay replicated without a word).
  std::vector<std::string> unmatched_keys(std::span<const std::string> paths) const;

  // The map as C++ statements to paste and edit, one per key in insertion order:
  //   layout_map["d1/kernel"] = {std::nullopt, "model"};
  std::string to_cpp(const std::string& variable = "layout_map") const;

  const DeviceMesh& device_mesh() const { return device_mesh_; }
  const std::vector<std::pair<std::string, TensorLayout>>& entries() const { return entries_; }

 private:
  DeviceMesh device_mesh_;
  std::vector<std::pair<std::string, TensorLayout>> entries_;  // in insertion order
};

}  // namespace chorus::distribution
