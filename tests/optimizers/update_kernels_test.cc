// The fused update loops agree bit for bit across ISAs and thread counts (optimizer
// state must not depend on the machine a checkpoint is resumed on).

#include "chorus/optimizers/update_kernels.h"

#include <cstring>
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
