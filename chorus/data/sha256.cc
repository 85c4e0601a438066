// SHA-256 through OpenSSL's EVP interface: libcrypto picks its SHA-NI / AVX2 code for
// this CPU at run time, so hashing keeps pace with the downloads it checks (it runs while
// bytes arrive and costs no extra pass).
#include "chorus/data/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "chorus/core/error.h"

namespace chorus::data {

void Sha256::FreeContext::operator()(evp_md_ctx_st* context) const { EVP_MD_CTX_free(context); }

Sha256::Sha256() : context_(EVP_MD_CTX_new()) {
  if (context_ == nullptr) throw_error<Error>("sha256: OpenSSL could not allocate a digest context");
  reset();
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::reset() {
  if (EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
    throw_error<Error>("sha256: OpenSSL could not initialise the digest");
  }
}

void Sha256::update(const void* data, size_t size) {
  if (size == 0) return;
  if (EVP_DigestUpdate(context_.get(), data, size) != 1) throw_error<Error>("sha256: OpenSSL digest update failed");
}

Sha256::Digest Sha256::finish() {
  Digest digest{};
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_.get(), digest.data(), &length) != 1 || length != digest.size()) {
    throw_error<Error>("sha256: OpenSSL digest finalisation failed");
  }
  reset();
  return digest;
}

std::string Sha256::finish_hex() { return to_hex(finish()); }

std::string to_hex(const Sha256::Digest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex(64, '0');
  for (size_t i = 0; i < digest.size(); ++i) {
    hex[2 * i] = kHex[digest[i] >> 4];
    hex[2 * i + 1] = kHex[digest[i] & 0xf];
  }
  return hex;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  return hasher.finish_hex();
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_error<IOError>("{}: cannot open for reading: {}", path, std::strerror(errno));
  Sha256 hasher;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    hasher.update(block.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw_error<IOError>("{}: read failed", path);
  return hasher.finish_hex();
}

}  // namespace chorus::data
