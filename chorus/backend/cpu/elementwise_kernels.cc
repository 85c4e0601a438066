// Dispatch and broadcasting drivers for the elementwise kernels. A broadcast is never
// materialised: the output's index space is collapsed into a short "plan" (size-1 axes
// dropped, adjacent axes merged where every operand allows), and the kernel runs over the
// plan's innermost runs, where each operand either advances (stride 1) or repeats one
// element (stride 0). Same-shape and scalar operands collapse to a single flat run; a
// (B, N) + (N,) row broadcast becomes B runs of N. Threads split the flat output range.
#include "chorus/backend/cpu/elementwise_kernels.h"

#include <algorithm>
#include <cassert>

#include "chorus/backend/cpu/elementwise_table.h"
#include "chorus/backend/cpu/parallel.h"

namespace chorus::backend::cpu {
namespace {

const KernelTable& current_table() {
  switch (active_isa()) {
    case Isa::kAvx512: return avx512_kernel_table();
    case Isa::kAvx2: return avx2_kernel_table();
    case Isa::kBaseline: break;
  }
  return baseline_kernel_table();
}

// Elements per thread below which another thread costs more (fork/join, a few us) than it
// saves. Memory-bound ops go parallel from 32K elements, transcendental ones from 4K.
constexpr int64_t kCheapGrain = 16384;
constexpr int64_t kCostlyGrain = 2048;

int64_t grain_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::kPower:
    case BinaryOp::kSoftplusGrad:
    case BinaryOp::kGeluTanhGrad:
    case BinaryOp::kGeluErfGrad: return kCostlyGrain;
    default: return kCheapGrain;
  }
}
int64_t grain_of(UnaryOp op) { return op >= UnaryOp::kExp ? kCostlyGrain : kCheapGrain; }

// The broadcast iteration space of an output and K inputs (see the file comment).
template <int K>
struct Plan {
  int rank = 0;
  std::array<int64_t, kMaxRank> dims{};
  std::array<std::array<int64_t, kMaxRank>, K> strides{};  // elements; 0 on broadcast axes
};

template <int K>
Plan<K> make_plan(const Shape& out, const std::array<const Shape*, K>& inputs) {
  std::array<std::array<int64_t, kMaxRank>, K> raw;
  for (int k = 0; k < K; ++k) raw[k] = broadcast_strides(*inputs[k], out);
  Plan<K> plan;
  for (int d = 0; d < out.rank(); ++d) {
    if (out[d] == 1) continue;
    if (plan.rank > 0) {
      // Axis d continues the previous one for every operand: merge them.
      const int last = plan.rank - 1;
      bool mergeable = true;
      for (int k = 0; k < K; ++k) mergeable = mergeable && plan.strides[k][last] == raw[k][d] * out[d];
      if (mergeable) {
        plan.dims[last] *= out[d];
        for (int k = 0; k < K; ++k) plan.strides[k][last] = raw[k][d];
        continue;
      }
    }
    plan.dims[plan.rank] = out[d];
    for (int k = 0; k < K; ++k) plan.strides[k][plan.rank] = raw[k][d];
    ++plan.rank;
  }
  if (plan.rank == 0) {  // one element: a flat run of 1
    plan.rank = 1;
    plan.dims[0] = 1;
    for (int k = 0; k < K; ++k) plan.strides[k][0] = 1;
  }
  return plan;
}

// Calls inner(offsets, out_offset, len) for each run of consecutive output elements in
// [begin, end) that stays within one innermost row; offsets are the inputs' element
// offsets at the run's start.
template <int K, class Inner>
void walk(const Plan<K>& plan, int64_t begin, int64_t end, Inner&& inner) {
  const int last = plan.rank - 1;
  std::array<int64_t, kMaxRank> index{};
  std::array<int64_t, K> offsets{};
  int64_t rest = begin;
  for (int d = last; d >= 0; --d) {
    index[d] = rest % plan.dims[d];
    rest /= plan.dims[d];
    for (int k = 0; k < K; ++k) offsets[k] += index[d] * plan.strides[k][d];
  }
  for (int64_t pos = begin; pos < end;) {
    const int64_t len = std::min(plan.dims[last] - index[last], end - pos);
    inner(offsets, pos, len);
    pos += len;
    index[last] += len;
    for (int k = 0; k < K; ++k) offsets[k] += len * plan.strides[k][last];
    for (int d = last; d > 0 && index[d] == plan.dims[d]; --d) {
      index[d] = 0;
      ++index[d - 1];
      for (int k = 0; k < K; ++k) offsets[k] += plan.strides[k][d - 1] - plan.dims[d] * plan.strides[k][d];
    }
  }
}

const char* bytes(const Tensor& t) { return static_cast<const char*>(t.raw_data()); }
char* mutable_bytes(const Tensor& t) { return static_cast<char*>(t.raw_data()); }

int where_size_index(size_t size) { return size == 1 ? 0 : size == 2 ? 1 : size == 4 ? 2 : 3; }

}  // namespace


void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& out, KernelParams params) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Plan<2> plan = make_plan<2>(out.shape(), {&a.shape(), &b.shape()});
  const int last = plan.rank - 1;
  const Layout layout = plan.strides[0][last] == 0   ? Layout::kScalarVector
                        : plan.strides[1][last] == 0 ? Layout::kVectorScalar
                                                     : Layout::kVectorVector;
  const BinaryKernel kernel = current_table().binary[KernelTable::binary_index(op, a.dtype(), layout)];
  assert(kernel != nullptr && a.dtype() == b.dtype());
  const char *pa = bytes(a), *pb = bytes(b);
  char* po = mutable_bytes(out);
  const int64_t in_size = static_cast<int64_t>(dtype_size(a.dtype()));
  const int64_t out_size = static_cast<int64_t>(dtype_size(out.dtype()));
  parallel_for(n, grain_of(op), [&](int64_t begin, int64_t end) {
    walk(plan, begin, end, [&](const std::array<int64_t, 2>& offsets, int64_t pos, int64_t len) {
      kernel(pa + offsets[0] * in_size, pb + offsets[1] * in_size, po + pos * out_size, len, params);
    });
  });
}

void binary_loop(BinaryOp op, DType dtype, const void* a, bool a_scalar, const void* b, bool b_scalar, void* out,
                 int64_t n, const KernelParams& params) {
  const Layout layout = a_scalar && n > 1 ? Layout::kScalarVector
                        : b_scalar && n > 1 ? Layout::kVectorScalar
                                            : Layout::kVectorVector;
  current_table().binary[KernelTable::binary_index(op, dtype, layout)](a, b, out, n, params);
}

void unary_loop(UnaryOp op, DType dtype, const void* x, void* out, int64_t n, const KernelParams& params) {
  current_table().unary[KernelTable::unary_index(op, dtype)](x, out, n, params);
}

void unary(UnaryOp op, const Tensor& x, const Tensor& out, KernelParams params) {
  const UnaryKernel kernel = current_table().unary[KernelTable::unary_index(op, x.dtype())];
  assert(kernel != nullptr && x.shape() == out.shape() && x.dtype() == out.dtype());
  const char* px = bytes(x);
  char* po = mutable_bytes(out);
  const int64_t size = static_cast<int64_t>(dtype_size(x.dtype()));
  parallel_for(x.numel(), grain_of(op), [&](int64_t begin, int64_t end) {
    kernel(px + begin * size, po + begin * size, end - begin, params);
  });
}

void where(const Tensor& condition, const Tensor& x, const Tensor& y, const Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Plan<3> plan = make_plan<3>(out.shape(), {&condition.shape(), &x.shape(), &y.shape()});
  const int last = plan.rank - 1;
  const int layout = (plan.strides[0][last] != 0 ? 4 : 0) | (plan.strides[1][last] != 0 ? 2 : 0) |
                     (plan.strides[2][last] != 0 ? 1 : 0);
  const int64_t size = static_cast<int64_t>(dtype_size(out.dtype()));
  const WhereKernel kernel =
      current_table().where[KernelTable::where_index(where_size_index(static_cast<size_t>(size)), layout)];
  assert(condition.dtype() == DType::kBool && x.dtype() == out.dtype() && y.dtype() == out.dtype());
  const auto* pc = reinterpret_cast<const uint8_t*>(bytes(condition));
  const char *px = bytes(x), *py = bytes(y);
  char* po = mutable_bytes(out);
  parallel_for(n, kCheapGrain, [&](int64_t begin, int64_t end) {
    walk(plan, begin, end, [&](const std::array<int64_t, 3>& offsets, int64_t pos, int64_t len) {
      kernel(pc + offsets[0], px + offsets[1] * size, py + offsets[2] * size, po + pos * size, len);
    });
  });
}

void cast(const Tensor& x, const Tensor& out) {
  assert(x.shape() == out.shape());
  cast(bytes(x), x.dtype(), mutable_bytes(out), out.dtype(), x.numel());
}

void cast(const void* x, DType from, void* out, DType to, int64_t n) {
  const CastKernel kernel = current_table().cast[KernelTable::cast_index(from, to)];
  const auto* px = static_cast<const char*>(x);
  auto* po = static_cast<char*>(out);
  const auto in_size = static_cast<int64_t>(dtype_size(from));
  const auto out_size = static_cast<int64_t>(dtype_size(to));
  parallel_for(n, kCheapGrain, [&](int64_t begin, int64_t end) {
    kernel(px + begin * in_size, po + begin * out_size, end - begin);
  });
}

bool contains_zero(const Tensor& x) {
  return visit_dtype(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bfloat16>) {
      const auto* data = static_cast<const uint16_t*>(x.raw_data());
      return std::any_of(data, data + x.numel(), [](uint16_t bits) { return (bits & 0x7fffu) == 0; });
    } else {
      const T* data = static_cast<const T*>(x.raw_data());
      return std::find(data, data + x.numel(), T{}) != data + x.numel();
    }
  });
}

}  // namespace chorus::backend::cpu
