// SHA-256 (FIPS 180-4) for verifying downloaded datasets: a streaming hasher fed while
// bytes arrive, plus one-shot helpers. A Sha256 object is plain state owned by one thread;
// the free functions are thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace chorus::data {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  Sha256() { reset(); }

  // Appends `size` bytes to the message.
  void update(const void* data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // Pads the message and returns its digest. The object then starts a new, empty message.
  Digest finish();
  // finish() as 64 lowercase hex characters, the form `sha256sum` prints.
  std::string finish_hex();
  void reset();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;    // bytes waiting in buffer_
  uint64_t length_ = 0;    // message length so far, in bytes
};

// Lowercase hex of a digest.
std::string to_hex(const Sha256::Digest& digest);

// The hex digest of `bytes`.
std::string sha256_hex(std::string_view bytes);

// The hex digest of the file at `path`, read in blocks. Throws IOError naming the file if
// it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace chorus::data
