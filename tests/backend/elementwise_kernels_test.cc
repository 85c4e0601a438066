// The elementwise kernel dispatch: every ISA this CPU runs agrees with the baseline
// kernels (bit for bit on integers, within a few ulp on floats, where FMA contraction
// differs); the override guard; and results independent of the thread count.
#include "chorus/backend/cpu/elementwise_kernels.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

#include "chorus/backend/cpu/parallel.h"
#include "chorus/ops/elementwise.h"
#include "tests/ops/elementwise_reference.h"
#include "tests/testing/test_names.h"

namespace chorus {
namespace {

using backend::cpu::active_isa;
using backend::cpu::Isa;
using backend::cpu::isa_name;
using backend::cpu::isa_supported;
using backend::cpu::ScopedIsaOverride;
using namespace testing::test_names;
using testing::random_of;
using testing::random_view;

using Computation = std::function<Tensor()>;

// Named computations covering every kernel family, on odd sizes and broadcasts. The
// lambdas take `op = op`: clang 14 (scripts/sanitize) cannot capture a structured binding.
std::vector<std::pair<std::string, Computation>> computations() {
  std::vector<std::pair<std::string, Computation>> list;
  for (DType dtype : {kFloat32, kBFloat16}) {
    const std::string suffix = std::string(" ") + std::string(dtype_name(dtype));
    const Tensor x = random_view({1023}, 1, dtype, -6, 6), pos = random_view({1023}, 2, dtype, 0.01, 9);
    const Tensor big = random_of({100003}, 3, dtype, -6, 6), row = random_of({7}, 4, dtype, -3, 3);
    const Tensor m = random_of({37, 7}, 5, dtype, -3, 3);
    for (auto [name, op] : std::initializer_list<std::pair<const char*, Tensor (*)(const Tensor&)>>{
             {"exp", ops::exp}, {"sigmoid", ops::sigmoid}, {"tanh", ops::tanh}, {"softplus", ops::softplus},
             {"negative", ops::negative}, {"abs", ops::abs}, {"square", ops::square}, {"relu", ops::relu}}) {
      list.emplace_back(name + suffix, [op = op, x] { return op(x); });
      list.emplace_back(name + suffix + " threaded", [op = op, big] { return op(big); });
    }
    for (auto [name, op] : std::initializer_list<std::pair<const char*, Tensor (*)(const Tensor&)>>{
             {"log", ops::log}, {"sqrt", ops::sqrt}, {"rsqrt", ops::rsqrt}}) {
      list.emplace_back(name + suffix, [op = op, pos] { return op(pos); });
    }
    list.emplace_back("gelu_tanh" + suffix, [x] { return ops::gelu(x, true); });
    list.emplace_back("gelu_erf" + suffix, [x] { return ops::gelu(x, false); });
    list.emplace_back("clip" + suffix, [x] { return ops::clip(x, -1, 2); });
    for (auto [name, op] : std::initializer_list<std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>>{
             {"add", ops::add}, {"subtract", ops::subtract}, {"multiply", ops::multiply}, {"divide", ops::divide},
             {"maximum", ops::maximum}, {"minimum", ops::minimum}, {"less", ops::less}, {"equal", ops::equal}}) {
      list.emplace_back(name + suffix, [op = op, x, pos] { return op(x, pos); });
      list.emplace_back(name + suffix + " row", [op = op, m, row] { return op(m, row); });
      list.emplace_back(name + suffix + " scalar-left", [op = op, row, m] { return op(row.first_axis_slice(2, 3), m); });
    }
    list.emplace_back("power" + suffix, [x, pos] { return ops::power(pos, x); });
    list.emplace_back("where" + suffix, [x, pos] { return ops::where(ops::less(x, pos), x, pos); });
    for (DType to : {kFloat32, kBFloat16, kInt32, kInt64, kBool}) {
      list.emplace_back("cast to " + std::string(dtype_name(to)) + suffix, [x, to] { return ops::cast(x, to); });
    }
  }
  for (DType dtype : {kInt32, kInt64}) {
    const std::string suffix = std::string(" ") + std::string(dtype_name(dtype));
    const Tensor a = random_view({1023}, 6, dtype, -1000, 1000), b = random_of({1023}, 7, dtype, 1, 100);
    for (auto [name, op] : std::initializer_list<std::pair<const char*, Tensor (*)(const Tensor&, const Tensor&)>>{
             {"add", ops::add}, {"multiply", ops::multiply}, {"divide", ops::divide}, {"maximum", ops::maximum},
             {"greater_equal", ops::greater_equal}}) {
      list.emplace_back(name + suffix, [op = op, a, b] { return op(a, b); });
    }
    list.emplace_back("abs" + suffix, [a] { return ops::abs(a); });
    list.emplace_back("clip" + suffix, [a] { return ops::clip(a, -10.5, 20); });
    list.emplace_back("cast to float32" + suffix, [a] { return ops::cast(a, kFloat32); });
    list.emplace_back("cast to bfloat16" + suffix, [a] { return ops::cast(a, kBFloat16); });
  }
  return list;
}

TEST(ElementwiseKernelsTest, EveryIsaAgreesWithTheBaseline) {
  RecordProperty("dispatched_isa", std::string(isa_name(active_isa())));
  for (const auto& [name, compute] : computations()) {
    Tensor expected;
    {
      ScopedIsaOverride baseline(Isa::kBaseline);
      expected = compute();
    }
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      if (!isa_supported(isa)) continue;
      ScopedIsaOverride guard(isa);
      const Tensor got = compute();
      // FMA contraction moves results by an ulp or two; the tanh GELU's negative tail
      // amplifies that (see vector_math.h).
      const double rtol = name.starts_with("gelu_tanh") ? 5e-6 : 1e-6;
      EXPECT_TRUE(testing::values_match(got, expected.to_vector<double>(), rtol, 1e-30))
          << name << " on " << isa_name(isa);
    }
  }
}

TEST(ElementwiseKernelsTest, OverrideIsScopedAndPerThread) {
  const Isa best = active_isa();
  {
    ScopedIsaOverride guard(Isa::kBaseline);
    EXPECT_EQ(active_isa(), Isa::kBaseline);
    Isa seen_elsewhere = Isa::kBaseline;
    std::thread([&] { seen_elsewhere = active_isa(); }).join();
    EXPECT_EQ(seen_elsewhere, best);
  }
  EXPECT_EQ(active_isa(), best);
  EXPECT_TRUE(isa_supported(Isa::kBaseline));
  EXPECT_EQ(isa_name(Isa::kAvx512), "avx512");
}

TEST(ElementwiseKernelsTest, OverrideRejectsAnIsaTheCpuLacks) {
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (isa_supported(isa)) continue;
    EXPECT_THAT([&] { ScopedIsaOverride guard(isa); },
                ThrowsMessage<ValueError>(HasSubstr("ScopedIsaOverride: this CPU cannot run")));
  }
}

TEST(ElementwiseKernelsTest, ResultsDoNotDependOnTheThreadCount) {
  const Tensor a = random_of({301, 257}, 8, kFloat32, -3, 3), row = random_of({257}, 9, kFloat32);
  const Tensor col = random_of({301, 1}, 10, kFloat32);
  auto compute = [&] {
    return std::vector<Tensor>{ops::add(a, row), ops::multiply(a, col), ops::gelu(a), ops::exp(a),
                               ops::where(ops::greater(a, row), a, col), ops::cast(a, kBFloat16)};
  };
  const int saved = backend::cpu::intra_op_threads();
  backend::cpu::set_intra_op_threads(1);
  const auto one = compute();
  backend::cpu::set_intra_op_threads(2);
  const auto two = compute();
  backend::cpu::set_intra_op_threads(saved);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(std::memcmp(one[i].raw_data(), two[i].raw_data(), one[i].nbytes()), 0) << "computation " << i;
  }
}

}  // namespace
}  // namespace chorus
