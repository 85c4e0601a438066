// CRC-32C: reflected polynomial 0x82F63B78, initial value and final XOR 0xFFFFFFFF
// (RFC 3720 §12.1, Appendix B.4). The portable path is a byte-at-a-time table; the
// SSE4.2 path feeds 8 bytes per crc32 instruction, compiled for that target in this
// function only, so the library still runs on any x86-64 and picks it at run time.
#include "chorus/io/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace chorus::io::crc32c {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78u;  // 0x1EDC6F41 bit-reversed

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t extend_portable(uint32_t crc, std::string_view data) {
  uint32_t state = ~crc;
  for (unsigned char byte : data) state = kTable[(state ^ byte) & 0xffu] ^ (state >> 8);
  return ~state;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t extend_sse42(uint32_t crc, std::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t state = ~crc;
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // unaligned; little-endian, as the CRC's bit order needs
    state = _mm_crc32_u64(state, word);
  }
  auto state32 = static_cast<uint32_t>(state);
  for (; n > 0; --n, ++p) state32 = _mm_crc32_u8(state32, static_cast<unsigned char>(*p));
  return ~state32;
}

bool has_sse42() {
  static const bool supported = __builtin_cpu_supports("sse4.2");
  return supported;
}
#else
uint32_t extend_sse42(uint32_t crc, std::string_view data) { return extend_portable(crc, data); }
bool has_sse42() { return false; }
#endif

uint32_t extend(uint32_t crc, std::string_view data) {
  return has_sse42() ? extend_sse42(crc, data) : extend_portable(crc, data);
}

}  // namespace chorus::io::crc32c
