// Keras 3's initializers (keras/src/initializers/): the same formulas, names and
// serialised configs. Random draws come from core/random.h's Philox generators: a
// seeded initializer restarts Generator(seed) on every call (so it returns the same
// values every time, as in Keras 3); an unseeded one forks a generator from the
// process-wide stream below.
//
// The process-wide stream is (seed, count): next_generator() returns
// Generator(seed).fork(count++). The default seed is kDefaultSeed, so a program that
// never calls set_random_seed() still builds the same weights on every run.
#include "chorus/layers/initializers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

#include "chorus/core/config_reader.h"
#include "chorus/core/creation.h"

namespace chorus::layers {
namespace {

constexpr uint64_t kDefaultSeed = 1337;

struct SeedStream {
  std::mutex mutex;
  uint64_t seed = kDefaultSeed;
  uint64_t count = 0;
};

SeedStream& seed_stream() {
  static SeedStream stream;
  return stream;
}

// input_axes and output_axes of a kernel (Keras 3's VarianceScaling arguments).
using FanAxes = std::pair<std::vector<int>, std::vector<int>>;

nlohmann::json seed_json(std::optional<uint64_t> seed) {
  return seed ? nlohmann::json(*seed) : nlohmann::json(nullptr);
}

// Keras's compute_fans: the products of the dims on input_axes and output_axes when
// both are given; else the last two dims of a kernel, times the receptive field (the
// product of the leading dims) for higher ranks; a vector is its own fan in and out.
std::pair<double, double> compute_fans(const Shape& shape, const std::optional<FanAxes>& axes) {
  const int r = shape.rank();
  if (axes) {
    double fan_in = 1, fan_out = 1;
    for (int a : axes->first) fan_in *= static_cast<double>(shape.dim(a));
    for (int a : axes->second) fan_out *= static_cast<double>(shape.dim(a));
    return {fan_in, fan_out};
  }
  if (r == 0) return {1.0, 1.0};
  if (r == 1) return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  double receptive_field = 1;
  for (int i = 0; i < r - 2; ++i) receptive_field *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[r - 2]) * receptive_field, static_cast<double>(shape[r - 1]) * receptive_field};
}

// The fan axes a Keras 3 config may carry: both input_axes and output_axes, or neither.
std::optional<FanAxes> axes_from(ConfigReader& config) {
  auto input = config.optional<std::vector<int>>("input_axes");
  auto output = config.optional<std::vector<int>>("output_axes");
  if (!input || !output) return std::nullopt;
  return FanAxes{std::move(*input), std::move(*output)};
}

}  // namespace

// What initializers.cc may touch in Initializer (its friend).
struct InitializerAccess {
  // Keras's VarianceScaling. `class_name` is the subclass name it is serialised under
  // (GlorotUniform, HeNormal, ...); the subclasses serialise only their seed (and the
  // fan axes when set).
  static Initializer variance_scaling(std::string class_name, double scale, std::string mode,
                                      std::string distribution, std::optional<uint64_t> seed,
                                      std::optional<FanAxes> axes = std::nullopt) {
    if (!(scale > 0)) {
      throw_error<ValueError>("VarianceScaling: expected scale > 0. Received: scale={}", scale);
    }
    if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg") {
      throw_error<ValueError>(
          "VarianceScaling: expected mode to be one of fan_in, fan_out, fan_avg. Received: mode={}", mode);
    }
    if (distribution == "normal") distribution = "truncated_normal";
    if (distribution != "uniform" && distribution != "truncated_normal" && distribution != "untruncated_normal") {
      throw_error<ValueError>(
          "VarianceScaling: expected distribution to be one of uniform, truncated_normal, untruncated_normal. "
          "Received: distribution={}",
          distribution);
    }
    nlohmann::json config = {{"seed", seed_json(seed)}};
    if (class_name == "VarianceScaling") {
      config["scale"] = scale;
      config["mode"] = mode;
      config["distribution"] = distribution;
    }
    if (axes) {
      config["input_axes"] = axes->first;
      config["output_axes"] = axes->second;
    }
    auto fill = [scale, mode, distribution, axes](const Shape& shape, DType dtype, Generator& gen) {
      const auto [fan_in, fan_out] = compute_fans(shape, axes);
      const double n = mode == "fan_in" ? fan_in : mode == "fan_out" ? fan_out : (fan_in + fan_out) / 2.0;
      const double s = scale / std::max(1.0, n);
      if (distribution == "truncated_normal") {
        // The stddev of a unit normal truncated to [-2, 2], so the result has variance s.
        return truncated_normal(shape, gen, 0.0, std::sqrt(s) / 0.87962566103423978, dtype);
      }
      if (distribution == "untruncated_normal") return normal(shape, gen, 0.0, std::sqrt(s), dtype);
      const double limit = std::sqrt(3.0 * s);
      return uniform(shape, gen, -limit, limit, dtype);
    };
    return Initializer(std::move(class_name), std::move(config), fill, seed);
  }

  // The variance-scaling family by class name: (scale, mode, distribution).
  static std::optional<std::tuple<double, std::string, std::string>> family(const Initializer& init) {
    static const std::map<std::string, std::tuple<double, std::string, std::string>, std::less<>> table = {
        {"GlorotUniform", {1.0, "fan_avg", "uniform"}},     {"GlorotNormal", {1.0, "fan_avg", "truncated_normal"}},
        {"HeUniform", {2.0, "fan_in", "uniform"}},          {"HeNormal", {2.0, "fan_in", "truncated_normal"}},
        {"LecunUniform", {1.0, "fan_in", "uniform"}},       {"LecunNormal", {1.0, "fan_in", "truncated_normal"}},
    };
    if (auto it = table.find(init.class_name_); it != table.end()) return it->second;
    if (init.class_name_ == "VarianceScaling") {
      return std::make_tuple(init.config_.at("scale").get<double>(), init.config_.at("mode").get<std::string>(),
                             init.config_.at("distribution").get<std::string>());
    }
    return std::nullopt;
  }

  static Initializer with_fan_axes(const Initializer& init, std::vector<int> input_axes,
                                   std::vector<int> output_axes) {
    const auto params = family(init);
    if (!params) return init;
    const auto& [scale, mode, distribution] = *params;
    return variance_scaling(init.class_name_, scale, mode, distribution, init.seed_,
                            FanAxes{std::move(input_axes), std::move(output_axes)});
  }
};

namespace {

Initializer variance_scaling(std::string class_name, double scale, std::string mode, std::string distribution,
                             std::optional<uint64_t> seed, std::optional<FanAxes> axes = std::nullopt) {
  return InitializerAccess::variance_scaling(std::move(class_name), scale, std::move(mode), std::move(distribution),
                                             seed, std::move(axes));
}

std::optional<uint64_t> seed_from(ConfigReader& config) { return config.optional<uint64_t>("seed"); }

// `init` with the fan axes a Keras 3 config may carry (input_axes / output_axes).
Initializer with_axes(const Initializer& init, ConfigReader& config) {
  auto axes = axes_from(config);
  return axes ? init.with_fan_axes(std::move(axes->first), std::move(axes->second)) : init;
}

using Factory = Initializer (*)(ConfigReader& config);

// Keras class names -> a constructor from their config.
const std::map<std::string, Factory, std::less<>>& class_table() {
  static const std::map<std::string, Factory, std::less<>> table = {
      {"Zeros", [](ConfigReader&) { return initializers::zeros(); }},
      {"Ones", [](ConfigReader&) { return initializers::ones(); }},
      {"Constant", [](ConfigReader& c) { return initializers::constant(c.number("value", 0.0)); }},
      {"RandomUniform",
       [](ConfigReader& c) {
         return initializers::random_uniform(c.number("minval", -0.05), c.number("maxval", 0.05), seed_from(c));
       }},
      {"RandomNormal",
       [](ConfigReader& c) {
         return initializers::random_normal(c.number("mean", 0.0), c.number("stddev", 0.05), seed_from(c));
       }},
      {"TruncatedNormal",
       [](ConfigReader& c) {
         return initializers::truncated_normal(c.number("mean", 0.0), c.number("stddev", 0.05), seed_from(c));
       }},
      {"GlorotUniform", [](ConfigReader& c) { return with_axes(initializers::glorot_uniform(seed_from(c)), c); }},
      {"GlorotNormal", [](ConfigReader& c) { return with_axes(initializers::glorot_normal(seed_from(c)), c); }},
      {"HeUniform", [](ConfigReader& c) { return with_axes(initializers::he_uniform(seed_from(c)), c); }},
      {"HeNormal", [](ConfigReader& c) { return with_axes(initializers::he_normal(seed_from(c)), c); }},
      {"LecunUniform", [](ConfigReader& c) { return with_axes(initializers::lecun_uniform(seed_from(c)), c); }},
      {"LecunNormal", [](ConfigReader& c) { return with_axes(initializers::lecun_normal(seed_from(c)), c); }},
      {"VarianceScaling",
       [](ConfigReader& c) {
         return variance_scaling("VarianceScaling", c.number("scale", 1.0), c.string("mode", "fan_in"),
                                 c.string("distribution", "truncated_normal"), seed_from(c), axes_from(c));
       }},
  };
  return table;
}

// Keras's string names (and its aliases "uniform", "normal", "zero", "one").
const std::map<std::string, Initializer (*)(), std::less<>>& name_table() {
  static const std::map<std::string, Initializer (*)(), std::less<>> table = {
      {"zeros", [] { return initializers::zeros(); }},
      {"ones", [] { return initializers::ones(); }},
      {"glorot_uniform", [] { return initializers::glorot_uniform(); }},
      {"glorot_normal", [] { return initializers::glorot_normal(); }},
      {"he_uniform", [] { return initializers::he_uniform(); }},
      {"he_normal", [] { return initializers::he_normal(); }},
      {"lecun_uniform", [] { return initializers::lecun_uniform(); }},
      {"lecun_normal", [] { return initializers::lecun_normal(); }},
      {"random_uniform", [] { return initializers::random_uniform(); }},
      {"random_normal", [] { return initializers::random_normal(); }},
      {"truncated_normal", [] { return initializers::truncated_normal(); }},
  };
  return table;
}

std::string known_names() {
  std::string names;
  for (const auto& [name, make] : name_table()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace

Initializer::Initializer(std::string class_name, nlohmann::json config, Fill fill, std::optional<uint64_t> seed)
    : class_name_(std::move(class_name)), config_(std::move(config)), fill_(std::move(fill)), seed_(seed) {}

Initializer::Initializer(std::string_view name) {
  static const std::map<std::string_view, std::string_view> aliases = {
      {"uniform", "random_uniform"}, {"normal", "random_normal"}, {"zero", "zeros"}, {"one", "ones"}};
  if (auto alias = aliases.find(name); alias != aliases.end()) name = alias->second;
  if (auto it = name_table().find(name); it != name_table().end()) {
    *this = it->second();
    return;
  }
  if (auto it = class_table().find(name); it != class_table().end()) {  // "GlorotUniform" works too
    const nlohmann::json empty = nlohmann::json::object();
    ConfigReader defaults(std::string(name), empty);
    *this = it->second(defaults);
    return;
  }
  throw_error<ValueError>("Unknown initializer '{}'. Expected one of: {}", name, known_names());
}

Initializer Initializer::with_fan_axes(std::vector<int> input_axes, std::vector<int> output_axes) const {
  return InitializerAccess::with_fan_axes(*this, std::move(input_axes), std::move(output_axes));
}

Tensor Initializer::operator()(const Shape& shape, DType dtype) const {
  Generator generator = seed_ ? Generator(*seed_) : next_generator();
  return fill_(shape, dtype, generator);
}

nlohmann::json Initializer::get_config() const { return {{"class_name", class_name_}, {"config", config_}}; }

Initializer Initializer::from_config(const nlohmann::json& config) {
  if (config.is_string()) return Initializer(config.get<std::string>());
  if (!config.is_object() || !config.contains("class_name") || !config["class_name"].is_string()) {
    throw_error<ValueError>(
        "Initializer: expected a name or {{\"class_name\": ..., \"config\": {{...}}}}. Received: {}", config.dump());
  }
  ConfigReader outer("Initializer", config);
  const std::string class_name = outer.string("class_name", "");
  outer.string("module", "");
  outer.string("registered_name", "");
  const nlohmann::json* inner = outer.find("config");
  outer.finish();
  auto it = class_table().find(class_name);
  if (it == class_table().end()) {
    std::string names;
    for (const auto& [name, make] : class_table()) names += (names.empty() ? "" : ", ") + name;
    throw_error<ValueError>("Unknown initializer class '{}'. Expected one of: {}", class_name, names);
  }
  const nlohmann::json empty = nlohmann::json::object();
  ConfigReader reader(class_name, inner != nullptr && !inner->is_null() ? *inner : empty);
  Initializer made = it->second(reader);
  reader.finish();
  return made;
}

void set_random_seed(uint64_t seed) {
  SeedStream& stream = seed_stream();
  std::lock_guard lock(stream.mutex);
  stream.seed = seed;
  stream.count = 0;
}

Generator next_generator() {
  SeedStream& stream = seed_stream();
  std::lock_guard lock(stream.mutex);
  return Generator(stream.seed).fork(stream.count++);
}

namespace initializers {

Initializer zeros() {
  return Initializer("Zeros", nlohmann::json::object(),
                     [](const Shape& shape, DType dtype, Generator&) { return chorus::zeros(shape, dtype); });
}

Initializer ones() {
  return Initializer("Ones", nlohmann::json::object(),
                     [](const Shape& shape, DType dtype, Generator&) { return chorus::ones(shape, dtype); });
}

Initializer constant(double value) {
  return Initializer("Constant", {{"value", value}},
                     [value](const Shape& shape, DType dtype, Generator&) { return full(shape, value, dtype); });
}

Initializer random_uniform(double minval, double maxval, std::optional<uint64_t> seed) {
  if (!(minval < maxval)) {
    throw_error<ValueError>("RandomUniform: expected minval < maxval. Received: minval={}, maxval={}", minval, maxval);
  }
  return Initializer(
      "RandomUniform", {{"seed", seed_json(seed)}, {"minval", minval}, {"maxval", maxval}},
      [=](const Shape& shape, DType dtype, Generator& gen) { return uniform(shape, gen, minval, maxval, dtype); },
      seed);
}

Initializer random_normal(double mean, double stddev, std::optional<uint64_t> seed) {
  if (!(stddev >= 0)) throw_error<ValueError>("RandomNormal: expected stddev >= 0. Received: stddev={}", stddev);
  return Initializer(
      "RandomNormal", {{"seed", seed_json(seed)}, {"mean", mean}, {"stddev", stddev}},
      [=](const Shape& shape, DType dtype, Generator& gen) { return normal(shape, gen, mean, stddev, dtype); }, seed);
}

Initializer truncated_normal(double mean, double stddev, std::optional<uint64_t> seed) {
  if (!(stddev >= 0)) throw_error<ValueError>("TruncatedNormal: expected stddev >= 0. Received: stddev={}", stddev);
  return Initializer(
      "TruncatedNormal", {{"seed", seed_json(seed)}, {"mean", mean}, {"stddev", stddev}},
      [=](const Shape& shape, DType dtype, Generator& gen) {
        return chorus::truncated_normal(shape, gen, mean, stddev, dtype);
      },
      seed);
}

Initializer glorot_uniform(std::optional<uint64_t> seed) {
  return variance_scaling("GlorotUniform", 1.0, "fan_avg", "uniform", seed);
}
Initializer glorot_normal(std::optional<uint64_t> seed) {
  return variance_scaling("GlorotNormal", 1.0, "fan_avg", "truncated_normal", seed);
}
Initializer he_uniform(std::optional<uint64_t> seed) {
  return variance_scaling("HeUniform", 2.0, "fan_in", "uniform", seed);
}
Initializer he_normal(std::optional<uint64_t> seed) {
  return variance_scaling("HeNormal", 2.0, "fan_in", "truncated_normal", seed);
}
Initializer lecun_uniform(std::optional<uint64_t> seed) {
  return variance_scaling("LecunUniform", 1.0, "fan_in", "uniform", seed);
}
Initializer lecun_normal(std::optional<uint64_t> seed) {
  return variance_scaling("LecunNormal", 1.0, "fan_in", "truncated_normal", seed);
}

}  // namespace initializers

}  // namespace chorus::layers
