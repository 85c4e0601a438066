// oneDNN matmul behind a per-thread LRU cache of primitives. Creating a primitive JIT-
// compiles a kernel (tens of microseconds to milliseconds), so it is done once per
// problem and thread; a cache hit costs a hash lookup and three set_data_handle calls.
// The key includes the thread budget because oneDNN fixes its blocking, and the number
// of OpenMP threads it starts, when the primitive is created. A problem whose bits would
// change with the budget runs on one thread (same_bits_on_one_thread).
#include "chorus/backend/cpu/matmul.h"

#include <cassert>
#include <cstring>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "chorus/backend/cpu/elementwise_kernels.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/core/error.h"

namespace chorus::backend::cpu {
namespace {

struct Key {
  MatmulProblem problem;
  int threads = 1;

  friend bool operator==(const Key&, const Key&) = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the fields
    auto mix = [&h](int64_t v) { h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull; };
    const MatmulProblem& p = k.problem;
    mix(p.rank);
    mix(static_cast<int64_t>(p.dtype));
    mix(k.threads);
    mix(p.bias);
    for (int i = 0; i < p.rank; ++i) {
      mix(p.a_dims[i]);
      mix(p.a_strides[i]);
      mix(p.b_dims[i]);
      mix(p.b_strides[i]);
      mix(p.c_dims[i]);
      mix(p.c_strides[i]);
    }
    return static_cast<size_t>(h);
  }
};

// A ready-to-run primitive with its argument memories; only the data handles change
// between calls.
struct Entry {
  Key key;
  dnnl::matmul primitive;
  dnnl::memory src, weights, dst, bias;
  std::unordered_map<int, dnnl::memory> args;
  bool one_thread = false;  // the primitive was made for, and runs on, one thread
};

// Everything oneDNN needs on one thread. Built on the thread's first matmul.
struct ThreadState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::list<Entry> lru;  // most recently used first
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index;
};

ThreadState& thread_state() {
  thread_local ThreadState state;  // oneDNN's stream and primitive cache are per thread
  return state;
}

dnnl::memory::data_type dnnl_type(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return dnnl::memory::data_type::f32;
    case DType::kBFloat16: return dnnl::memory::data_type::bf16;
    default: throw_error<DTypeError>("matmul: unsupported dtype {}", dtype_name(dtype));
  }
}

dnnl::memory::desc make_desc(int rank, const std::array<int64_t, kMaxRank>& dims,
                             const std::array<int64_t, kMaxRank>& strides, dnnl::memory::data_type type) {
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.begin() + rank), type,
                            dnnl::memory::dims(strides.begin(), strides.begin() + rank));
}

// c's strides: the given ones, or contiguous row-major when none are set.
std::array<int64_t, kMaxRank> c_strides_of(const MatmulProblem& p) {
  for (int i = 0; i < p.rank; ++i) {
    if (p.c_strides[i] != 0) return p.c_strides;
  }
  std::array<int64_t, kMaxRank> strides{};
  int64_t stride = 1;
  for (int i = p.rank - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= p.c_dims[i];
  }
  return strides;
}

Entry make_entry(const Key& key, const dnnl::engine& engine) {
  const MatmulProblem& p = key.problem;
  const auto type = dnnl_type(p.dtype);
  Shape c_shape(std::span<const int64_t>(p.c_dims.data(), static_cast<size_t>(p.rank)));
  const auto src_md = make_desc(p.rank, p.a_dims, p.a_strides, type);
  const auto weights_md = make_desc(p.rank, p.b_dims, p.b_strides, type);
  const auto dst_md = make_desc(p.rank, p.c_dims, c_strides_of(p), type);
  // The bias as a (1, .., 1, N) operand that oneDNN broadcasts over c.
  std::array<int64_t, kMaxRank> bias_dims{}, bias_strides{};
  for (int i = 0; i < p.rank; ++i) {
    bias_dims[i] = i == p.rank - 1 ? p.c_dims[i] : 1;
    bias_strides[i] = i == p.rank - 1 ? 1 : p.c_dims[p.rank - 1];
  }
  const auto bias_md = p.bias ? make_desc(p.rank, bias_dims, bias_strides, type) : dnnl::memory::desc();
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, weights_md, bias_md, dst_md), engine);
    Entry entry{key,
                dnnl::matmul(pd),
                dnnl::memory(src_md, engine, DNNL_MEMORY_NONE),
                dnnl::memory(weights_md, engine, DNNL_MEMORY_NONE),
                dnnl::memory(dst_md, engine, DNNL_MEMORY_NONE),
                dnnl::memory(bias_md, engine, DNNL_MEMORY_NONE),
                {}};
    entry.args = {{DNNL_ARG_SRC, entry.src}, {DNNL_ARG_WEIGHTS, entry.weights}, {DNNL_ARG_DST, entry.dst}};
    if (p.bias) entry.args.emplace(DNNL_ARG_BIAS, entry.bias);
    return entry;
  } catch (const dnnl::error& e) {
    throw_error<Error>("matmul: oneDNN could not create a primitive for output {} ({}): {}", c_shape.to_string(),
                       dtype_name(p.dtype), e.what());
  }
}

void execute(ThreadState& state, Entry& entry, const void* a, const void* b, void* c, const void* bias) {
  std::optional<IntraOpThreadsScope> one_thread;
  if (entry.one_thread) one_thread.emplace(1);
  // oneDNN takes non-const handles but only reads src and weights.
  entry.src.set_data_handle(const_cast<void*>(a));
  entry.weights.set_data_handle(const_cast<void*>(b));
  entry.dst.set_data_handle(c);
  if (entry.key.problem.bias) entry.bias.set_data_handle(const_cast<void*>(bias));
  entry.primitive.execute(state.stream, entry.args);
  state.stream.wait();
}

// The elements an operand's strides reach: 1 + sum((dim - 1) * stride).
size_t strided_extent(int rank, const std::array<int64_t, kMaxRank>& dims, const std::array<int64_t, kMaxRank>& strides) {
  size_t extent = 1;
  for (int i = 0; i < rank; ++i) extent += static_cast<size_t>((dims[i] - 1) * strides[i]);
  return extent;
}

// `count` values in [-0.5, 0.5) of `dtype`, the same on every call.
Tensor probe_values(size_t count, DType dtype) {
  Tensor values = Tensor::empty(Shape{static_cast<int64_t>(count)}, kFloat32);
  float* v = values.data<float>();
  uint32_t state = 0x9E3779B9u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    v[i] = static_cast<float>(state >> 8) * (1.0f / 16777216.0f) - 0.5f;
  }
  if (dtype == kFloat32) return values;
  Tensor out = Tensor::empty(values.shape(), dtype);
  cast(values.raw_data(), kFloat32, out.raw_data(), dtype, static_cast<int64_t>(count));
  return out;
}

// Whether `budget` (a primitive for more than one thread) gives the bits the same problem
// gives on one thread. On AVX2-only hosts oneDNN splits the reduction of skinny products
// (one row, or a few columns) across threads, so the order of the sums, and their last
// bits, follow the thread count; chorus's results must not (a compiled step runs each
// matmul on the budget or on one thread, whichever is faster: jit/executable.h). The
// order does not depend on the values, so one run of each on the same operands tells.
bool same_bits_on_one_thread(ThreadState& state, Entry& budget, Entry& one) {
  const MatmulProblem& p = budget.key.problem;
  const Tensor a = probe_values(strided_extent(p.rank, p.a_dims, p.a_strides), p.dtype);
  const Tensor b = probe_values(strided_extent(p.rank, p.b_dims, p.b_strides), p.dtype);
  const Tensor bias = p.bias ? probe_values(static_cast<size_t>(p.c_dims[p.rank - 1]), p.dtype) : Tensor();
  const Tensor c_budget = probe_values(strided_extent(p.rank, p.c_dims, c_strides_of(p)), p.dtype);
  const Tensor c_one = c_budget.clone();
  const void* bias_data = p.bias ? bias.raw_data() : nullptr;
  execute(state, budget, a.raw_data(), b.raw_data(), c_budget.raw_data(), bias_data);
  execute(state, one, a.raw_data(), b.raw_data(), c_one.raw_data(), bias_data);
  return std::memcmp(c_budget.raw_data(), c_one.raw_data(), c_one.nbytes()) == 0;
}

// A primitive for the calling thread's budget, or for one thread where the budget's bits
// would differ from one thread's.
Entry make_checked_entry(const Key& key, ThreadState& state) {
  Entry entry = make_entry(key, state.engine);
  if (key.threads == 1) return entry;
  Entry one = [&] {
    IntraOpThreadsScope one_thread(1);
    return make_entry(Key{key.problem, 1}, state.engine);
  }();
  one.key = key;
  one.one_thread = true;
  if (same_bits_on_one_thread(state, entry, one)) return entry;
  return one;
}

Entry& lookup(ThreadState& state, const MatmulProblem& p) {
  const Key key{p, intra_op_threads()};
  if (auto it = state.index.find(key); it != state.index.end()) {
    state.lru.splice(state.lru.begin(), state.lru, it->second);  // iterators stay valid
    return *it->second;
  }
  if (state.lru.size() >= kMatmulCacheCapacity) {
    state.index.erase(state.lru.back().key);
    state.lru.pop_back();
  }
  state.lru.push_front(make_checked_entry(key, state));
  state.index.emplace(key, state.lru.begin());
  return state.lru.front();
}

// Whether oneDNN runs bfloat16 matmuls on this CPU. oneDNN 2.6 needs AVX-512 for them
// (AMD EPYC hosts without it have been seen here); asked once by building a tiny primitive.
bool native_bfloat16_matmul() {
  static const bool supported = [] {
    try {
      const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      const dnnl::memory::desc md({2, 2}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), engine);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return supported;
}


Tensor widen(const void* data, size_t count) {
  Tensor out = Tensor::empty(Shape{static_cast<int64_t>(count)}, kFloat32);
  cast(data, kBFloat16, out.raw_data(), kFloat32, static_cast<int64_t>(count));
  return out;
}

}  // namespace

void matmul(const MatmulProblem& p, const void* a, const void* b, void* c, const void* bias) {
  assert(p.rank >= 2 && p.rank <= kMaxRank);
  assert(p.bias == (bias != nullptr));
  assert(p.a_dims[p.rank - 1] == p.b_dims[p.rank - 2] && p.a_dims[p.rank - 1] > 0);
  if (p.dtype == kBFloat16 && !native_bfloat16_matmul()) {
    // The same product in float32 on widened copies (same strides), rounded once: the
    // result bfloat16 kernels give, which accumulate in float32 too.
    MatmulProblem f32 = p;
    f32.dtype = kFloat32;
    const Tensor a32 = widen(a, strided_extent(p.rank, p.a_dims, p.a_strides));
    const Tensor b32 = widen(b, strided_extent(p.rank, p.b_dims, p.b_strides));
    // A strided c's span is widened too, so elements between strided ones keep their
    // values; a dense one is overwritten whole.
    const size_t c_extent = strided_extent(p.rank, p.c_dims, c_strides_of(p));
    size_t c_elements = 1;
    for (int i = 0; i < p.rank; ++i) c_elements *= static_cast<size_t>(p.c_dims[i]);
    const Tensor c32 = c_extent == c_elements ? Tensor::empty(Shape{static_cast<int64_t>(c_extent)}, kFloat32)
                                              : widen(c, c_extent);
    const Tensor bias32 = p.bias ? widen(bias, static_cast<size_t>(p.c_dims[p.rank - 1])) : Tensor();
    matmul(f32, a32.raw_data(), b32.raw_data(), c32.raw_data(), p.bias ? bias32.raw_data() : nullptr);
    cast(c32.raw_data(), kFloat32, c, kBFloat16, static_cast<int64_t>(c_extent));
    return;
  }
  ThreadState& state = thread_state();
  execute(state, lookup(state, p), a, b, c, bias);
}

size_t matmul_cache_size() { return thread_state().lru.size(); }

void clear_matmul_cache() {
  ThreadState& state = thread_state();
  state.index.clear();
  state.lru.clear();
}

}  // namespace chorus::backend::cpu
