// The fused update loops agree bit for bit across ISAs and thread counts (optimizer
// state must not depend on the machine a checkpoint is resumed on).

#include "chorus/optimizers/update_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/backend/cpu/isa.h"
#include "chorus/backend/cpu/parallel.h"
#include "tests/testing/test_util.h"

namespace chorus::optimizers::kernels {
namespace {

using backend::cpu::Isa;

std::vector<float> random_floats(int64_t n, uint64_t seed, double lo, double hi) {
  return chorus::testing::random_tensor({n}, seed, lo, hi).to_vector<float>();
}

// Every array a kernel touches, filled reproducibly; compared whole.
struct State {
  explicit State(int64_t n)
      : var(random_floats(n, 1, -1, 1)),
        s0(random_floats(n, 2, -0.1, 0.1)),
        s1(random_floats(n, 3, 0, 0.5)),
        s2(random_floats(n, 4, -0.1, 0.1)),
        grad(random_floats(n, 5, -2, 2)) {}
  std::vector<float> var, s0, s1, s2, grad;
  // Bitwise, so NaNs (centered RMSprop can take the root of a negative) compare too.
  bool operator==(const State& other) const {
    auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    return same(var, other.var) && same(s0, other.s0) && same(s1, other.s1) && same(s2, other.s2) &&
           same(grad, other.grad);
  }
};

// Runs `step` three times on a fresh state, on `isa` with `threads` intra-op threads.
State run(Isa isa, int threads, int64_t n, const std::function<void(State&)>& step) {
  const backend::cpu::ScopedIsaOverride isa_guard(isa);
  const int saved = backend::cpu::intra_op_threads();
  backend::cpu::set_intra_op_threads(threads);
  State state(n);
  for (int i = 0; i < 3; ++i) step(state);
  backend::cpu::set_intra_op_threads(saved);
  return state;
}

void expect_same_everywhere(const std::function<void(State&)>& step) {
  for (const int64_t n : {int64_t{1}, int64_t{300}, int64_t{50'001}}) {
    const State reference = run(Isa::kBaseline, 1, n, step);
    for (const Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
      if (!backend::cpu::isa_supported(isa)) continue;
      for (const int threads : {1, 2}) {
        EXPECT_TRUE(run(isa, threads, n, step) == reference)
            << backend::cpu::isa_name(isa) << ", " << threads << " threads, n=" << n;
      }
    }
  }
}

TEST(UpdateKernelsTest, AdamAgreesAcrossIsasAndThreads) {
  for (const bool amsgrad : {false, true}) {
    expect_same_everywhere([amsgrad](State& s) {
      adam({s.var.data(), s.s0.data(), s.s1.data(), amsgrad ? s.s2.data() : nullptr, s.grad.data(), 0.1f, 0.001f,
            0.01f, 1e-7f},
           static_cast<int64_t>(s.var.size()));
    });
  }
}

TEST(UpdateKernelsTest, SgdAdagradRmspropAgreeAcrossIsasAndThreads) {
  expect_same_everywhere([](State& s) {
    sgd({s.var.data(), s.s0.data(), s.grad.data(), 0.1f, 0.9f, true}, static_cast<int64_t>(s.var.size()));
  });
  expect_same_everywhere([](State& s) {
    adagrad({s.var.data(), s.s1.data(), s.grad.data(), 0.2f, 1e-7f}, static_cast<int64_t>(s.var.size()));
  });
  expect_same_everywhere([](State& s) {
    rmsprop({s.var.data(), s.s1.data(), s.s0.data(), s.s2.data(), s.grad.data(), 0.01f, 0.9f, 0.1f, 0.5f, 1e-3f},
            static_cast<int64_t>(s.var.size()));
  });
  expect_same_everywhere([](State& s) {
    weight_decay(s.var.data(), static_cast<int64_t>(s.var.size()), 0.004f, 0.01f);
    clip(s.grad.data(), s.s0.data(), static_cast<int64_t>(s.var.size()), 0.5f);
    scale(s.grad.data(), s.s2.data(), static_cast<int64_t>(s.var.size()), 0.25f);
  });
}

// A gradient like an embedding table's: most 32-element pieces all +0.0, others a -0.0
// piece, a NaN, an infinity, a single non-zero element, and random values.
std::vector<float> sparse_gradient(int64_t n) {
  std::vector<float> g = random_floats(n, 5, -2, 2);
  for (int64_t p = 0; p * kAdagradPiece < n; ++p) {
    const int64_t begin = p * kAdagradPiece, end = std::min(n, begin + kAdagradPiece);
    const int64_t kind = p % 7;
    if (kind >= 3) {
      for (int64_t i = begin; i < end; ++i) g[static_cast<size_t>(i)] = kind == 6 ? -0.0f : 0.0f;
    }
    if (kind == 4) g[static_cast<size_t>(end - 1)] = 1e-30f;  // one non-zero element
    if (kind == 5 && p % 2 == 0) g[static_cast<size_t>(begin)] = std::numeric_limits<float>::quiet_NaN();
    if (kind == 5 && p % 2 == 1) g[static_cast<size_t>(begin)] = std::numeric_limits<float>::infinity();
  }
  return g;
}

TEST(UpdateKernelsTest, AdagradSkippingZeroPiecesMatchesTheDenseUpdateBitForBit) {
  for (const int64_t n : {int64_t{1}, int64_t{31}, int64_t{300}, int64_t{50'001}}) {
    auto step = [n](bool skip) {
      return [n, skip](State& s) {
        s.grad = sparse_gradient(n);
        s.s1[0] = 0.0f;  // an accumulator at +0 (initial_accumulator_value = 0)
        adagrad({s.var.data(), s.s1.data(), s.grad.data(), 0.2f, 1e-7f, skip}, n);
      };
    };
    const State dense = run(Isa::kBaseline, 1, n, step(false));
    for (const Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
      if (!backend::cpu::isa_supported(isa)) continue;
      for (const int threads : {1, 2}) {
        EXPECT_TRUE(run(isa, threads, n, step(true)) == dense)
            << backend::cpu::isa_name(isa) << ", " << threads << " threads, n=" << n;
      }
    }
  }
}

TEST(UpdateKernelsTest, AdagradSkipsOnlyAllZeroPiecesAndStillUpdatesNaNPieces) {
  const int64_t n = 4 * kAdagradPiece;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> var(n, 1.0f), acc(n, 0.5f), grad(n, 0.0f);
  // Piece 0: all +0 with accumulators the dense update would change (NaN var from a
  // negative one); skipped, so both stay as they were.
  acc[3] = -1.0f;
  // Piece 1: one NaN: the whole piece is updated; the NaN element becomes NaN.
  grad[kAdagradPiece + 2] = nan;
  // Piece 2: all -0.0: updated densely (no change in value).
  for (int64_t i = 2 * kAdagradPiece; i < 3 * kAdagradPiece; ++i) grad[static_cast<size_t>(i)] = -0.0f;
  acc[2 * kAdagradPiece] = -1.0f;
  // Piece 3: one value.
  grad[3 * kAdagradPiece + 5] = 0.5f;
  adagrad({var.data(), acc.data(), grad.data(), 0.2f, 1e-7f, true}, n);
  EXPECT_EQ(acc[3], -1.0f);
  EXPECT_EQ(var[3], 1.0f);
  EXPECT_TRUE(std::isnan(var[kAdagradPiece + 2]));
  EXPECT_TRUE(std::isnan(acc[kAdagradPiece + 2]));
  EXPECT_EQ(var[kAdagradPiece + 3], 1.0f);
  EXPECT_TRUE(std::isnan(var[2 * kAdagradPiece]));  // -0 piece took the dense path: 0 / NaN
  EXPECT_EQ(acc[3 * kAdagradPiece + 5], 0.75f);
  EXPECT_LT(var[3 * kAdagradPiece + 5], 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    if (i == 3 || i == kAdagradPiece + 2 || i == 2 * kAdagradPiece || i == 3 * kAdagradPiece + 5) continue;
    EXPECT_EQ(acc[static_cast<size_t>(i)], 0.5f) << i;
    EXPECT_EQ(var[static_cast<size_t>(i)], 1.0f) << i;
  }
}

TEST(UpdateKernelsTest, SumOfSquaresIsExactAndThreadIndependent) {
  const std::vector<float> x = random_floats(50'001, 9, -3, 3);
  double expected = 0;
  for (const float v : x) expected += static_cast<double>(v) * v;
  const double one = sum_of_squares(x.data(), 50'001);
  EXPECT_NEAR(one, expected, 1e-9 * expected);
  for (const Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (!backend::cpu::isa_supported(isa)) continue;
    const backend::cpu::ScopedIsaOverride guard(isa);
    for (const int threads : {1, 2}) {
      const int saved = backend::cpu::intra_op_threads();
      backend::cpu::set_intra_op_threads(threads);
      EXPECT_EQ(sum_of_squares(x.data(), 50'001), one) << backend::cpu::isa_name(isa) << ", " << threads;
      backend::cpu::set_intra_op_threads(saved);
    }
  }
  EXPECT_EQ(sum_of_squares(x.data(), 0), 0.0);
}

}  // namespace
}  // namespace chorus::optimizers::kernels
