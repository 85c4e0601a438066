// Logs: the named numbers a training step, an epoch or evaluate() reports ("loss",
// "sparse_categorical_accuracy", "val_loss", …), in the order Keras prints them.
// A small value type; not synchronised.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace chorus::models {

class Logs {
 public:
  using Entry = std::pair<std::string, double>;
  Logs() = default;
  Logs(std::initializer_list<Entry> entries) : entries_(entries) {}

  // Sets `name`, keeping its position if present, appending otherwise.
  void set(const std::string& name, double value);
  bool contains(const std::string& name) const;
  // Throws ValueError listing the names present.
  double at(const std::string& name) const;
  double operator[](const std::string& name) const { return at(name); }
  // Appends every entry of `other` with `prefix` ("val_").
  void merge(const Logs& other, const std::string& prefix = "");

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
};

}  // namespace chorus::models
