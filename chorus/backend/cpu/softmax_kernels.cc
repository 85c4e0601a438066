// Drivers of the softmax family: rows to threads (rows are independent), and other
// axes through a transpose to rows and back.
#include "chorus/backend/cpu/softmax_kernels.h"

#include <algorithm>
#include <memory>

#include "chorus/backend/cpu/broadcast_kernels.h"
#include "chorus/backend/cpu/copy_kernels.h"
#include "chorus/backend/cpu/parallel.h"

namespace chorus::backend::cpu {
namespace {

constexpr int64_t kSoftmaxGrain = 16384;  // elements per task

// Calls fn(first_row, rows) over [0, rows) in parallel.
template <class Fn>
void over_rows(int64_t rows, int64_t n, Fn&& fn) {
  parallel_for(rows, std::max<int64_t>(1, kSoftmaxGrain / n), [&](int64_t b, int64_t e) { fn(b, e - b); });
}

// (outer, n, inner) <-> (outer, inner, n).
std::unique_ptr<float[]> to_rows(const float* x, int64_t outer, int64_t n, int64_t inner) {
  auto t = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(outer * n * inner));
  const int perm[] = {0, 2, 1};
  permute(x, Shape{outer, n, inner}, perm, t.get(), sizeof(float));
  return t;
}
void from_rows(const float* t, float* y, int64_t outer, int64_t n, int64_t inner) {
  const int perm[] = {0, 2, 1};
  permute(t, Shape{outer, inner, n}, perm, y, sizeof(float));
}

using RowsFn = void (*)(const float*, float*, int64_t, int64_t);
using GradRowsFn = void (*)(const float*, const float*, float*, int64_t, int64_t);

void forward(RowsFn rows_fn, const float* x, float* y, int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1) {
    over_rows(outer, n, [&](int64_t b, int64_t rows) { rows_fn(x + b * n, y + b * n, rows, n); });
    return;
  }
  auto t = to_rows(x, outer, n, inner);
  float* tp = t.get();
  over_rows(outer * inner, n, [&](int64_t b, int64_t rows) { rows_fn(tp + b * n, tp + b * n, rows, n); });
  from_rows(tp, y, outer, n, inner);
}

void backward(GradRowsFn rows_fn, const float* y, const float* g, float* dx, int64_t outer, int64_t n,
              int64_t inner) {
  if (inner == 1) {
    over_rows(outer, n, [&](int64_t b, int64_t rows) { rows_fn(y + b * n, g + b * n, dx + b * n, rows, n); });
    return;
  }
  auto ty = to_rows(y, outer, n, inner), tg = to_rows(g, outer, n, inner);
  float *yp = ty.get(), *gp = tg.get();
  // The row kernels read y[i] and g[i] before writing dx[i], so dx may overwrite g.
  over_rows(outer * inner, n, [&](int64_t b, int64_t rows) { rows_fn(yp + b * n, gp + b * n, gp + b * n, rows, n); });
  from_rows(gp, dx, outer, n, inner);
}

}  // namespace

void softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, Isa isa) {
  forward(reduce_kernel_table(isa).softmax_rows, x, y, outer, n, inner);
}

void log_softmax(const float* x, float* y, int64_t outer, int64_t n, int64_t inner, Isa isa) {
  forward(reduce_kernel_table(isa).log_softmax_rows, x, y, outer, n, inner);
}

void logsumexp(const float* x, float* out, int64_t outer, int64_t n, int64_t inner, Isa isa) {
  const auto rows_fn = reduce_kernel_table(isa).logsumexp_rows;
  if (inner == 1) {
    over_rows(outer, n, [&](int64_t b, int64_t rows) { rows_fn(x + b * n, out + b, rows, n); });
    return;
  }
  auto t = to_rows(x, outer, n, inner);
  const float* tp = t.get();
  over_rows(outer * inner, n, [&](int64_t b, int64_t rows) { rows_fn(tp + b * n, out + b, rows, n); });
}

void softmax_grad(const float* y, const float* g, float* dx, int64_t outer, int64_t n, int64_t inner,
                  Isa isa) {
  backward(reduce_kernel_table(isa).softmax_grad_rows, y, g, dx, outer, n, inner);
}

void log_softmax_grad(const float* y, const float* g, float* dx, int64_t outer, int64_t n, int64_t inner,
                      Isa isa) {
  backward(reduce_kernel_table(isa).log_softmax_grad_rows, y, g, dx, outer, n, inner);
}

void logsumexp_grad(const float* x, const Shape& full, const float* lse, const float* g, const Shape& kept,
                    float* dx, Isa isa) {
  const ReduceKernelTable& table = reduce_kernel_table(isa);
  for_each_broadcast_run(full, kept, kSoftmaxGrain, [&](int64_t fo, int64_t ko, int64_t len, int64_t step) {
    if (step == 0) {
      table.exp_shift_scale(x + fo, dx + fo, len, lse[ko], g[ko]);
    } else {
      table.exp_shift_scale_each(x + fo, dx + fo, len, lse + ko, g + ko);
    }
  });
}

namespace {

auto cross_entropy_fn(const ReduceKernelTable& t, const float*) { return t.sparse_cross_entropy_rows_f32; }
auto cross_entropy_fn(const ReduceKernelTable& t, const bfloat16*) { return t.sparse_cross_entropy_rows_bf16; }
auto cross_entropy_grad_fn(const ReduceKernelTable& t, const float*) { return t.sparse_cross_entropy_grad_rows_f32; }
auto cross_entropy_grad_fn(const ReduceKernelTable& t, const bfloat16*) {
  return t.sparse_cross_entropy_grad_rows_bf16;
}

template <class T>
void cross_entropy(const T* x, const int64_t* labels, float* loss, float* max, float* sum, int64_t rows, int64_t n,
                   Isa isa) {
  const auto rows_fn = cross_entropy_fn(reduce_kernel_table(isa), x);
  over_rows(rows, n, [&](int64_t b, int64_t count) {
    rows_fn(x + b * n, labels + b, count, n, loss + b, max + b, sum + b);
  });
}

template <class T>
void cross_entropy_grad(const T* x, const int64_t* labels, const float* max, const float* sum, const float* g, T* dx,
                        int64_t rows, int64_t n, Isa isa) {
  const auto rows_fn = cross_entropy_grad_fn(reduce_kernel_table(isa), x);
  over_rows(rows, n, [&](int64_t b, int64_t count) {
    rows_fn(x + b * n, labels + b, max + b, sum + b, g + b, dx + b * n, count, n);
  });
}

}  // namespace

void sparse_softmax_cross_entropy(const float* x, const int64_t* labels, float* loss, float* max, float* sum,
                                  int64_t rows, int64_t n, Isa isa) {
  cross_entropy(x, labels, loss, max, sum, rows, n, isa);
}
void sparse_softmax_cross_entropy(const bfloat16* x, const int64_t* labels, float* loss, float* max, float* sum,
                                  int64_t rows, int64_t n, Isa isa) {
  cross_entropy(x, labels, loss, max, sum, rows, n, isa);
}

void sparse_softmax_cross_entropy_grad(const float* x, const int64_t* labels, const float* max, const float* sum,
                                       const float* g, float* dx, int64_t rows, int64_t n, Isa isa) {
  cross_entropy_grad(x, labels, max, sum, g, dx, rows, n, isa);
}
void sparse_softmax_cross_entropy_grad(const bfloat16* x, const int64_t* labels, const float* max, const float* sum,
                                       const float* g, bfloat16* dx, int64_t rows, int64_t n, Isa isa) {
  cross_entropy_grad(x, labels, max, sum, g, dx, rows, n, isa);
}

}  // namespace chorus::backend::cpu
