#include "chorus/core/random.h"

#include <cmath>
#include <mutex>
#include <numbers>
#include <optional>
#include <random>

namespace chorus {
namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

// SplitMix64 finaliser: spreads (key, stream) into a well-mixed key.
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// 24 random bits -> float in [0, 1).
float to_unit_float(uint32_t bits) { return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f); }

// Fills `out` (n elements of dtype) with value_at(i) as float.
template <class F>
Tensor fill_floats(const Shape& shape, DType dtype, F value_at) {
  if (!is_floating(dtype)) {
    throw_error<DTypeError>("random: expected a floating dtype (float32 or bfloat16), got {}", dtype_name(dtype));
  }
  Tensor out = Tensor::empty(shape, dtype);
  const int64_t n = shape.numel();
  if (dtype == kFloat32) {
    float* data = out.data<float>();
    for (int64_t i = 0; i < n; ++i) data[i] = value_at(i);
  } else {
    bfloat16* data = out.data<bfloat16>();
    for (int64_t i = 0; i < n; ++i) data[i] = bfloat16(value_at(i));
  }
  return out;
}

// A standard normal from the pair of words (w0, w1) by Box-Muller.
float box_muller(uint32_t w0, uint32_t w1) {
  const float u1 = 1.0f - to_unit_float(w0);  // (0, 1]: log stays finite
  const float u2 = to_unit_float(w1);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(2.0f * std::numbers::pi_v<float> * u2);
}

}  // namespace

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key) {
  auto [c0, c1, c2, c3] = counter;
  auto [k0, k1] = key;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{kPhiloxM0} * c0;
    const uint64_t p1 = uint64_t{kPhiloxM1} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  return {c0, c1, c2, c3};
}

Generator Generator::fork(uint64_t stream) const { return Generator(mix64(key_ ^ mix64(stream + 1))); }

Tensor uniform(const Shape& shape, Generator& gen, double minval, double maxval, DType dtype) {
  if (!(minval < maxval)) {
    throw_error<ValueError>("uniform: expected minval < maxval. Received: minval={}, maxval={}", minval, maxval);
  }
  const int64_t n = shape.numel();
  const uint64_t key = gen.key();
  const uint64_t first = gen.advance(static_cast<uint64_t>((n + 3) / 4));
  const float lo = static_cast<float>(minval), width = static_cast<float>(maxval - minval);
  std::array<uint32_t, 4> block{};
  return fill_floats(shape, dtype, [&](int64_t i) {
    if (i % 4 == 0) block = philox4x32(key, first + static_cast<uint64_t>(i / 4));
    return lo + width * to_unit_float(block[i % 4]);
  });
}

Tensor normal(const Shape& shape, Generator& gen, double mean, double stddev, DType dtype) {
  const int64_t n = shape.numel();
  const uint64_t key = gen.key();
  const uint64_t first = gen.advance(static_cast<uint64_t>((n + 1) / 2));
  std::array<uint32_t, 4> block{};
  return fill_floats(shape, dtype, [&](int64_t i) {
    if (i % 2 == 0) block = philox4x32(key, first + static_cast<uint64_t>(i / 2));
    const int w = 2 * static_cast<int>(i % 2);
    return static_cast<float>(mean + stddev * box_muller(block[w], block[w + 1]));
  });
}

Tensor truncated_normal(const Shape& shape, Generator& gen, double mean, double stddev, DType dtype) {
  const int64_t n = shape.numel();
  const uint64_t key = gen.key();
  const uint64_t first = gen.advance(static_cast<uint64_t>((n + 1) / 2));
  return fill_floats(shape, dtype, [&](int64_t i) {
    // Redraw k uses its own key, so element i's value depends on (key, counter, i) only.
    for (uint64_t redraw = 0;; ++redraw) {
      const uint64_t k = redraw == 0 ? key : mix64(key ^ mix64(redraw));
      const auto block = philox4x32(k, first + static_cast<uint64_t>(i / 2));
      const int w = 2 * static_cast<int>(i % 2);
      const float z = box_muller(block[w], block[w + 1]);
      if (std::abs(z) <= 2.0f) return static_cast<float>(mean + stddev * z);
    }
  });
}

namespace {
std::mutex g_unseeded_mutex;
std::optional<Generator> g_unseeded;  // set: draws follow this stream
}  // namespace

uint64_t unseeded_seed() {
  std::lock_guard lock(g_unseeded_mutex);
  if (g_unseeded) return mix64(g_unseeded->key() ^ g_unseeded->advance(1));
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device();
}

void set_unseeded_seed_stream(uint64_t seed) {
  std::lock_guard lock(g_unseeded_mutex);
  g_unseeded = Generator(seed);
}

}  // namespace chorus
