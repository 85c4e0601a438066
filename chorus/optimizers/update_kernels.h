// Internal to the optimizers: the fused update loops. Each optimizer's step is one pass
// over a float32 variable, its slots and its gradient, vectorised per ISA (AVX-512, AVX2,
// baseline, picked by backend/cpu/isa.h) and split across the intra-op threads. Chunks
// are independent, so results do not depend on the thread count; the ISAs agree bit for
// bit (no FMA contraction; sqrt and division are IEEE-exact). Stateless; thread-safe.
#pragma once

#include <cstdint>

namespace chorus::optimizers::kernels {

// Elements per parallel chunk: smaller chunks cost more in OpenMP start-up than they
// gain (the MNIST MLP's largest variable, 784x256, gets about 12 chunks).
inline constexpr int64_t kGrain = 16384;

// SGD: without momentum var -= grad * lr; with it m = m * momentum - grad * lr, then
// var += m (or, Nesterov, var += m * momentum - grad * lr).
struct SgdArgs {
  float* var;
  float* momentum;  // nullptr when momentum_rate is 0
  const float* grad;
  float lr;
  float momentum_rate;
  bool nesterov;
};

// Adam: m += (g - m) * (1 - beta_1); v += (g^2 - v) * (1 - beta_2); with amsgrad
// v_hat = max(v_hat, v) replaces v below; var -= m * alpha / (sqrt(v) + epsilon), where
// alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) is folded by the caller.
struct AdamArgs {
  float* var;
  float* m;
  float* v;
  float* v_hat;  // nullptr unless amsgrad
  const float* grad;
  float one_minus_beta_1;
  float one_minus_beta_2;
  float alpha;
  float epsilon;
};

// Adagrad: acc += g^2; var -= lr * g / sqrt(acc + epsilon).
// With skip_zero_pieces, pieces of kAdagradPiece elements (aligned to multiples of it)
// whose gradient is all +0.0 are left alone: an embedding table's gradient is zero in
// every row the batch did not touch. That is exact, bit for bit, when lr is finite and
// >= 0, epsilon >= FLT_MIN (so acc + epsilon > 0 even with denormals flushed) and every
// accumulator is +0, positive, +inf or NaN, which Adagrad's own updates keep from an
// initial value >= +0: acc + 0 = acc, and var - (+0) / r = var for r > 0. A piece with
// any other bit pattern (-0.0, NaN, a value) takes the dense update.
inline constexpr int64_t kAdagradPiece = 32;
// With reset_grad (the same array as grad), every element the update reads is set back
// to +0.0 afterwards, so a gradient buffer kept between steps is all zero again without
// a separate fill; with skip_zero_pieces only the pieces updated are written.
struct AdagradArgs {
  float* var;
  float* accumulator;
  const float* grad;
  float lr;
  float epsilon;
  bool skip_zero_pieces = false;
  float* reset_grad = nullptr;
};

// A sparse gradient grouped by row (SparseRows): group g is row rows[g] of the variable;
// gradient row p (`width` floats at values + p * width) belongs to group place[p], or to
// ~place[p] (place[p] < 0) where it is the group's first. Adding a group's rows onto +0.0
// in position order gives the dense gradient's row bit for bit (the order
// IndexedSlices::to_dense() adds them in).
struct RowGroups {
  const int64_t* rows;
  int64_t count;  // groups
  const int32_t* place;
  const float* values;
  int64_t positions;  // gradient rows
  int64_t width;      // floats per row
};

// RMSprop: vel = rho * vel + (1 - rho) * g^2; centered: avg = rho * avg + (1 - rho) * g
// and the denominator is vel - avg^2 + epsilon, else vel + epsilon; inc = lr * g /
// sqrt(denominator); with momentum mom = momentum * mom + inc and var -= mom, else
// var -= inc.
struct RmspropArgs {
  float* var;
  float* velocity;
  float* momentum;          // nullptr when momentum_rate is 0
  float* average_gradient;  // nullptr unless centered
  const float* grad;
  float lr;
  float rho;
  float one_minus_rho;
  float momentum_rate;
  float epsilon;
};

// Each runs over elements [0, n) of the arrays in its arguments.
void sgd(const SgdArgs& args, int64_t n);
void adam(const AdamArgs& args, int64_t n);
void adagrad(const AdagradArgs& args, int64_t n);
void rmsprop(const RmspropArgs& args, int64_t n);
// Adagrad on groups [begin, end) of a sparse gradient: each group's row of var and
// accumulator takes the dense update from its summed gradient (args.grad is unused).
// Groups name distinct rows, so disjoint ranges may run on different threads.
void adagrad_groups(const AdagradArgs& args, const RowGroups& groups, int64_t begin, int64_t end);
// Plain gradient descent (args.momentum nullptr) on groups [begin, end) of a sparse
// gradient, as adagrad_groups: each group's row takes the dense update of its summed row.
void sgd_groups(const SgdArgs& args, const RowGroups& groups, int64_t begin, int64_t end);

// Keras's decoupled weight decay: var = var - var * wd * lr, in place.
void weight_decay(float* var, int64_t n, float wd, float lr);
// out = x * factor (clipnorm, global_clipnorm). out may equal x.
void scale(const float* x, float* out, int64_t n, float factor);
// out = clip(x, -limit, limit) (clipvalue). out may equal x.
void clip(const float* x, float* out, int64_t n, float limit);
// sum(x^2) accumulated in double, over fixed blocks of kGrain summed in order, so the
// result is the same for every thread count.
double sum_of_squares(const float* x, int64_t n);

// The per-ISA loops: each runs over [begin, end). Defined in update_kernels_<isa>.cc.
struct UpdateTable {
  void (*sgd)(const SgdArgs& args, int64_t begin, int64_t end);
  // `sums`: scratch for (end - begin) * groups.width floats, as adagrad_groups'.
  void (*sgd_groups)(const SgdArgs& args, const RowGroups& groups, int64_t begin, int64_t end, float* sums);
  void (*adam)(const AdamArgs& args, int64_t begin, int64_t end);
  void (*adagrad)(const AdagradArgs& args, int64_t begin, int64_t end);
  // `sums`: scratch for (end - begin) * groups.width floats.
  void (*adagrad_groups)(const AdagradArgs& args, const RowGroups& groups, int64_t begin, int64_t end, float* sums);
  void (*rmsprop)(const RmspropArgs& args, int64_t begin, int64_t end);
  void (*weight_decay)(float* var, int64_t begin, int64_t end, float wd, float lr);
  void (*scale)(const float* x, float* out, int64_t begin, int64_t end, float factor);
  void (*clip)(const float* x, float* out, int64_t begin, int64_t end, float limit);
  double (*sum_of_squares)(const float* x, int64_t begin, int64_t end);
};

const UpdateTable& baseline_update_table();
const UpdateTable& avx2_update_table();
const UpdateTable& avx512_update_table();

}  // namespace chorus::optimizers::kernels
