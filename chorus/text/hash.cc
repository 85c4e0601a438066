#include "chorus/text/hash.h"

#include <farmhash.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <memory>

#include "chorus/core/error.h"

namespace chorus::text {
namespace {

// OpenSSL's SipHash implementation, fetched once (EVP_MAC objects are immutable and
// may be shared by threads).
EVP_MAC* siphash_mac() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "SIPHASH", nullptr);
  if (mac == nullptr) throw_error<Error>("siphash64: OpenSSL provides no SIPHASH MAC");
  return mac;
}

// A keyed SipHash-2-4-64 context that hashes one string after another. One per thread.
class SipHasher {
 public:
  explicit SipHasher(const SipHashKey& key) : context_(EVP_MAC_CTX_new(siphash_mac())) {
    if (context_ == nullptr) throw_error<Error>("siphash64: OpenSSL could not allocate a MAC context");
    for (int word = 0; word < 2; ++word) {
      for (int byte = 0; byte < 8; ++byte) key_[word * 8 + byte] = static_cast<unsigned char>(key[word] >> (8 * byte));
    }
  }

  uint64_t operator()(std::string_view text) {
    size_t size = 8;
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_size_t(OSSL_MAC_PARAM_SIZE, &size), OSSL_PARAM_construct_end()};
    unsigned char out[8];
    size_t written = 0;
    if (EVP_MAC_init(context_.get(), key_, sizeof key_, params) != 1 ||
        EVP_MAC_update(context_.get(), reinterpret_cast<const unsigned char*>(text.data()), text.size()) != 1 ||
        EVP_MAC_final(context_.get(), out, &written, sizeof out) != 1 || written != sizeof out) {
      throw_error<Error>("siphash64: OpenSSL SipHash computation failed");
    }
    uint64_t value = 0;  // the 8 output bytes are the 64-bit result, little-endian
    for (int byte = 7; byte >= 0; --byte) value = (value << 8) | out[byte];
    return value;
  }

 private:
  struct Free {
    void operator()(EVP_MAC_CTX* context) const { EVP_MAC_CTX_free(context); }
  };
  std::unique_ptr<EVP_MAC_CTX, Free> context_;
  unsigned char key_[16];
};

template <class Hash>
Tensor hash_buckets(const char* op, const Tensor& input, int64_t num_buckets, Hash&& hash) {
  if (input.dtype() != kString) {
    throw_error<DTypeError>("{}: expected a string tensor, got dtype {}", op, dtype_name(input.dtype()));
  }
  if (num_buckets <= 0) {
    throw_error<ValueError>("{}: expected num_buckets > 0. Received: num_buckets={}", op, num_buckets);
  }
  const auto elements = input.strings();
  Tensor out = Tensor::empty(input.shape(), kInt64);
  int64_t* buckets = out.data<int64_t>();
  for (size_t i = 0; i < elements.size(); ++i) {
    buckets[i] = static_cast<int64_t>(hash(elements[i]) % static_cast<uint64_t>(num_buckets));
  }
  return out;
}

}  // namespace

uint64_t fingerprint64(std::string_view text) { return util::Fingerprint64(text.data(), text.size()); }

uint64_t siphash64(const SipHashKey& key, std::string_view text) { return SipHasher(key)(text); }

Tensor to_hash_bucket_fast(const Tensor& input, int64_t num_buckets) {
  return hash_buckets("strings.to_hash_bucket_fast", input, num_buckets, fingerprint64);
}

Tensor to_hash_bucket_strong(const Tensor& input, int64_t num_buckets, const SipHashKey& key) {
  SipHasher hasher(key);
  return hash_buckets("strings.to_hash_bucket_strong", input, num_buckets, hasher);
}

}  // namespace chorus::text
