// LayoutMap: which TensorLayout each variable (or layer output) gets under ModelParallel,
// keyed by path patterns (keras.distribution.LayoutMap). A path takes the layout of a key
// equal to it, else of the one key whose regular expression (RE2) matches the whole path;
// none means replicated. Built on one thread, then read-only.
//
//   LayoutMap layout_map(mesh);
//   layout_map["d1/kernel"] = {std::nullopt, "model"};
//   layout_map["d1/bias"] = {"model"};
#pragma once

#include <optional>
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

  const DeviceMesh& device_mesh() const { return device_mesh_; }
  const std::vector<std::pair<std::string, TensorLayout>>& entries() const { return entries_; }

 private:
  DeviceMesh device_mesh_;
  std::vector<std::pair<std::string, TensorLayout>> entries_;  // in insertion order
};

}  // namespace chorus::distribution
