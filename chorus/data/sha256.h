// SHA-256 for verifying downloaded datasets: a streaming hasher fed while bytes arrive,
// plus one-shot helpers, over OpenSSL's libcrypto (EVP). A Sha256 object owns its digest
// context and belongs to one thread; the free functions are thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of chorus's public headers

namespace chorus::data {

class Sha256 {
 public:
  using Digest = std::array<uint8_t, 32>;

  // Throws Error if libcrypto cannot create a digest context.
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  // Appends `size` bytes to the message.
  void update(const void* data, size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // Pads the message and returns its digest. The object then starts a new, empty message.
  Digest finish();
  // finish() as 64 lowercase hex characters, the form `sha256sum` prints.
  std::string finish_hex();
  // Discards what was fed so far and starts a new, empty message.
  void reset();

 private:
  struct FreeContext {
    void operator()(evp_md_ctx_st* context) const;
  };
  std::unique_ptr<evp_md_ctx_st, FreeContext> context_;
};

// Lowercase hex of a digest.
std::string to_hex(const Sha256::Digest& digest);

// The hex digest of `bytes`.
std::string sha256_hex(std::string_view bytes);

// The hex digest of the file at `path`, read in blocks. Throws IOError naming the file if
// it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace chorus::data
