// Initializer: how a layer fills a new weight (Keras's initializers, same names and
// defaults). A small value type; calling it from several threads is safe. Unseeded
// initializers draw from the process-wide seed stream that set_random_seed() restarts
// (keras.utils.set_random_seed); its default seed is 1337, so a program builds the same
// weights run to run even without setting one.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chorus/core/random.h"
#include "chorus/core/tensor.h"

namespace chorus::layers {

class Initializer {
 public:
  using Fill = std::function<Tensor(const Shape& shape, DType dtype, Generator& generator)>;
  Initializer(std::string class_name, nlohmann::json config, Fill fill, std::optional<uint64_t> seed = {});
  // Keras string names: "zeros", "ones", "glorot_uniform", "glorot_normal", "he_uniform",
  // "he_normal", "lecun_uniform", "lecun_normal", "random_uniform", "random_normal",
  // "truncated_normal". Throws ValueError listing them for any other name.
  Initializer(std::string_view name);  // NOLINT: Keras accepts a string wherever an initializer goes
  Initializer(const char* name) : Initializer(std::string_view(name)) {}  // NOLINT

  // A new tensor of `shape`. With a seed, every call gives the same values (Keras 3).
  Tensor operator()(const Shape& shape, DType dtype = kFloat32) const;

  // For the variance-scaling family (GlorotUniform, HeNormal, ..., VarianceScaling): the
  // same initializer with fan_in the product of a kernel's dims on `input_axes` and
  // fan_out that on `output_axes` (Keras 3's input_axes / output_axes, which EinsumDense
  // sets: a (C, N, H) attention kernel has fan_in C and fan_out N * H). Any other
  // initializer is returned unchanged. Negative axes count from the end.
  Initializer with_fan_axes(std::vector<int> input_axes, std::vector<int> output_axes) const;

  // {"class_name": "GlorotUniform", "config": {"seed": null}} as Keras serialises it.
  nlohmann::json get_config() const;
  static Initializer from_config(const nlohmann::json& config);

 private:
  friend struct InitializerAccess;  // initializers.cc reads the fields in with_fan_axes()

  std::string class_name_;
  nlohmann::json config_;
  Fill fill_;
  std::optional<uint64_t> seed_;
};

// Restarts the process-wide stream unseeded initializers and layers draw from.
void set_random_seed(uint64_t seed);
// A fresh generator forked from the process-wide stream (advances it). Thread-safe.
Generator next_generator();

namespace initializers {
Initializer zeros();
Initializer ones();
Initializer constant(double value);
Initializer random_uniform(double minval = -0.05, double maxval = 0.05, std::optional<uint64_t> seed = {});
Initializer random_normal(double mean = 0.0, double stddev = 0.05, std::optional<uint64_t> seed = {});
Initializer truncated_normal(double mean = 0.0, double stddev = 0.05, std::optional<uint64_t> seed = {});
// Variance scaling family: fan_in / fan_out as Keras computes them (the last two dims of
// a kernel; receptive field product for higher ranks).
Initializer glorot_uniform(std::optional<uint64_t> seed = {});
Initializer glorot_normal(std::optional<uint64_t> seed = {});
Initializer he_uniform(std::optional<uint64_t> seed = {});
Initializer he_normal(std::optional<uint64_t> seed = {});
Initializer lecun_uniform(std::optional<uint64_t> seed = {});
Initializer lecun_normal(std::optional<uint64_t> seed = {});
}  // namespace initializers

}  // namespace chorus::layers
