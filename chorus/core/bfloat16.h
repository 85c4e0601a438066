// bfloat16: the upper 16 bits of an IEEE float32. Conversion from float rounds to
// nearest even and keeps NaN a NaN. A plain value type; thread-safe.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace chorus {

struct bfloat16 {
  uint16_t bits = 0;

  constexpr bfloat16() = default;
  explicit bfloat16(float value) : bits(round_from(value)) {}
  explicit operator float() const { return std::bit_cast<float>(uint32_t{bits} << 16); }

  static constexpr bfloat16 from_bits(uint16_t b) {
    bfloat16 v;
    v.bits = b;
    return v;
  }

 private:
  static uint16_t round_from(float value) {
    uint32_t u = std::bit_cast<uint32_t>(value);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return static_cast<uint16_t>(u >> 16);
  }
};

inline bool operator==(bfloat16 a, bfloat16 b) { return float(a) == float(b); }

// `v` as a type C++ arithmetic and comparisons work on: bfloat16 widens to float, every
// other element type passes through unchanged.
template <class T>
auto arithmetic_value(T v) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

}  // namespace chorus
