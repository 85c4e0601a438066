// CRC-32C (Castagnoli, the iSCSI CRC of RFC 3720) and the "masked" form TFRecord files
// store. Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

namespace chorus::io::crc32c {

// The CRC-32C of `data` continued from `crc` (the CRC of the bytes before it; 0 to
// start): extend(extend(0, a), b) == value(a + b). Uses the SSE4.2 crc32 instruction
// where the CPU has it, the table otherwise; both give the same result.
uint32_t extend(uint32_t crc, std::string_view data);
inline uint32_t value(std::string_view data) { return extend(0, data); }

// The two implementations behind extend(), for tests and benchmarks.
uint32_t extend_portable(uint32_t crc, std::string_view data);
// REQUIRES: has_sse42() (the instruction faults otherwise).
uint32_t extend_sse42(uint32_t crc, std::string_view data);
// Whether this CPU has the SSE4.2 crc32 instruction (always false off x86-64).
bool has_sse42();

// TFRecord stores CRCs masked (rotated right by 15 bits, plus a constant) because a CRC
// computed over data that itself holds CRCs is weak.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
constexpr uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
constexpr uint32_t unmask(uint32_t masked) {
  const uint32_t rotated = masked - kMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace chorus::io::crc32c
