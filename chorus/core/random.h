// Seeded, counter-based random numbers (Philox-4x32-10, Salmon et al. 2011). A Generator
// is a (key, counter) pair: element i of a draw depends only on the key and the counter,
// never on thread count or scheduling, so replicas and workers derive independent and
// reproducible streams with fork(). One Generator must not be used by two threads at once;
// fork one per thread instead.
#pragma once

#include <array>
#include <cstdint>

#include "chorus/core/tensor.h"

namespace chorus {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : key_(seed) {}
  Generator(uint64_t key, uint64_t counter) : key_(key), counter_(counter) {}

  // An independent generator for sub-stream `stream` (a replica, a worker, a layer):
  // its key mixes this key with `stream`; this generator is unchanged.
  Generator fork(uint64_t stream) const;

  // Reserves `blocks` Philox blocks (4 x 32 random bits each) and returns the first counter.
  uint64_t advance(uint64_t blocks) {
    const uint64_t first = counter_;
    counter_ += blocks;
    return first;
  }

  uint64_t key() const { return key_; }
  // The position in the stream; (key, counter) restore the generator exactly.
  uint64_t counter() const { return counter_; }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

// The Philox-4x32-10 block for a 128-bit counter and 64-bit key: four 32-bit words.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);
// The same with the counter's upper 64 bits zero: what Generator's draws use.
inline std::array<uint32_t, 4> philox4x32(uint64_t key, uint64_t counter) {
  return philox4x32({static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0, 0},
                    {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)});
}

// The seed of something the user left unseeded (a dataset shuffle): drawn from the OS,
// unless set_unseeded_seed_stream() made the draws a fixed sequence — what the workers of
// a multi-worker job do, so that every worker shuffles alike. Thread-safe.
uint64_t unseeded_seed();
void set_unseeded_seed_stream(uint64_t seed);

// Floats in [minval, maxval).
Tensor uniform(const Shape& shape, Generator& gen, double minval = 0, double maxval = 1, DType dtype = kFloat32);
Tensor normal(const Shape& shape, Generator& gen, double mean = 0, double stddev = 1, DType dtype = kFloat32);
// Normal draws redrawn until within two standard deviations of the mean (Keras's
// TruncatedNormal initializer).
Tensor truncated_normal(const Shape& shape, Generator& gen, double mean = 0, double stddev = 1,
                        DType dtype = kFloat32);

}  // namespace chorus
