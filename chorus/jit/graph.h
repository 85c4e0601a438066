// A traced function as data: the kernels one call of it launched, in order, over values
// that live in buffers. The tracer (tracer.h) makes it, the passes (passes.h) rewrite it,
// the memory plan (memory_plan.h) places its buffers and Executable runs it. Plain data;
// not synchronised.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "chorus/backend/cpu/elementwise_op_codes.h"
#include "chorus/core/tensor.h"

namespace chorus::jit {

// Writes `outputs` from `inputs`: contiguous tensors of the values' shapes and dtypes on
// whatever buffers the plan gives. It may read nothing else but what it captured when
// traced (host scalars, shapes), which is the same at every call.
using Kernel = std::function<void(std::span<const Tensor> inputs, std::span<const Tensor> outputs)>;

enum class BufferKind : uint8_t {
  kArgument,      // the function's argument `argument`: copied in at each call
  kExternal,      // memory the function reads but does not own (a variable): read live
  kConstant,      // made on the host during the trace (zeros, scalar(2)): kept as traced
  kIntermediate,  // written by a node: placed by the memory plan
};

struct Buffer {
  BufferKind kind = BufferKind::kIntermediate;
  size_t nbytes = 0;
  int argument = -1;  // kArgument: which
  std::shared_ptr<Storage> held;  // kExternal, kConstant: the traced storage itself
};

// A tensor of the trace: a contiguous view of `buffer` from byte `offset`.
struct Value {
  int buffer = -1;
  size_t offset = 0;
  Shape shape;
  DType dtype = kFloat32;
  size_t nbytes() const { return static_cast<size_t>(shape.numel()) * dtype_size(dtype); }
};

enum class NodeKind : uint8_t {
  kUnary,   // backend::cpu::unary(unary, inputs[0], outputs[0], params)
  kBinary,  // backend::cpu::binary(binary, inputs[0], inputs[1], outputs[0], params)
  kKernel,  // kernel(inputs, outputs)
  kFused,   // members run block by block in one pass (passes.h: fuse_elementwise)
};

struct Node {
  std::string op;  // the op that launched it ("add", "matmul"), or "fused" with members
  std::string layer;  // the path of the innermost layer whose call launched it, or empty
  NodeKind kind = NodeKind::kKernel;
  backend::cpu::UnaryOp unary{};
  backend::cpu::BinaryOp binary{};
  backend::cpu::KernelParams params;
  Kernel kernel;
  std::vector<int> inputs;   // value ids
  std::vector<int> outputs;  // value ids
  bool effects = false;  // does more than write its outputs (a host node: launch_host)
  std::vector<Node> members;  // kFused: the elementwise nodes, in order
  std::vector<int> internal;  // kFused: values made and read only inside it (no buffer)
};

struct Graph {
  std::string name;
  std::vector<Buffer> buffers;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int> arguments;  // the value of each argument
  std::vector<int> results;    // the value of each result

  // One line per node ("%7 = add(%3, %5)  (64, 32) float32  # dense_1"), then the results.
  std::string to_text() const;
  // The same graph for Graphviz (`dot -Tsvg`).
  std::string to_dot() const;
};

// The buffers a node writes (by value id list) and reads, as sets of buffer ids.
std::vector<int> buffers_of(const Graph& graph, std::span<const int> values);

}  // namespace chorus::jit
