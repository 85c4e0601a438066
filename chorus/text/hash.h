// The string hashes TensorFlow's tf.strings.to_hash_bucket_fast / _strong use, which
// Keras's Hashing layer and the lookup layers' OOV buckets are built on. Pure functions;
// thread-safe.
//
//   fingerprint64(s): FarmHash's Fingerprint64 (farmhashna::Hash64 of the bytes of s), from
//     Debian's libfarmhash: TensorFlow's Fingerprint64, stable across platforms and builds.
//   siphash64(key, s): SipHash-2-4 with a 64-bit output (Aumasson and Bernstein, 2012) of
//     the bytes of s, keyed by the 16 bytes k0 || k1, each little-endian — what
//     highwayhash::SipHash({k0, k1}, ...) computes for TensorFlow's StrongKeyedHash. From
//     OpenSSL's EVP_MAC "SIPHASH" (size 8, 2 compression and 4 finalisation rounds).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "chorus/core/tensor.h"

namespace chorus::text {

using SipHashKey = std::array<uint64_t, 2>;

uint64_t fingerprint64(std::string_view text);
uint64_t siphash64(const SipHashKey& key, std::string_view text);

// tf.strings.to_hash_bucket_fast: fingerprint64(element) % num_buckets for every element
// of a string tensor, as an int64 tensor of its shape. Throws DTypeError for another
// dtype, ValueError unless num_buckets > 0.
Tensor to_hash_bucket_fast(const Tensor& input, int64_t num_buckets);
// tf.strings.to_hash_bucket_strong: siphash64(key, element) % num_buckets, likewise.
Tensor to_hash_bucket_strong(const Tensor& input, int64_t num_buckets, const SipHashKey& key);

}  // namespace chorus::text
