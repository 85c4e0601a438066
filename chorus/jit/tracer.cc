#include "chorus/jit/tracer.h"

#include <fmt/format.h>

#include "chorus/backend/cpu/elementwise_kernels.h"

namespace chorus::jit {

Tracer::Tracer(std::string name, std::span<const Tensor> arguments) : scope_(this) {
  graph_.name = std::move(name);
  for (size_t a = 0; a < arguments.size(); ++a) {
    const Tensor& t = arguments[a];
    if (!t.defined() || t.dtype() == kString || t.impl()->sharding != nullptr) {
      fail(fmt::format("argument {} is {}: only dense numeric tensors are traced", a,
                       !t.defined() ? "undefined" : t.dtype() == kString ? "a string tensor" : "a sharded block"));
      return;
    }
    const TensorImpl& impl = *t.impl();
    if (buffer_of_.contains(impl.storage.get())) {
      fail(fmt::format("argument {} shares memory with an earlier argument", a));
      return;
    }
    graph_.buffers.push_back(Buffer{.kind = BufferKind::kArgument, .nbytes = t.nbytes(), .argument = static_cast<int>(a)});
    const int buffer = static_cast<int>(graph_.buffers.size()) - 1;
    buffer_of_[impl.storage.get()] = buffer;
    bases_[buffer] = impl.offset;
    graph_.arguments.push_back(add_value(buffer, t));
  }
}

Tracer::~Tracer() = default;

void Tracer::fail(std::string reason) {
  if (!failure_.empty()) return;
  failure_ = layers_.empty() ? std::move(reason) : fmt::format("in layer '{}': {}", layers_.back(), reason);
}

int Tracer::add_buffer(BufferKind kind, const TensorImpl& impl) {
  graph_.buffers.push_back(Buffer{.kind = kind, .nbytes = impl.storage->nbytes()});
  if (kind != BufferKind::kIntermediate) graph_.buffers.back().held = impl.storage;
  const int buffer = static_cast<int>(graph_.buffers.size()) - 1;
  buffer_of_[impl.storage.get()] = buffer;
  bases_[buffer] = 0;
  return buffer;
}

int Tracer::add_value(int buffer, const Tensor& tensor) {
  const size_t offset = tensor.impl()->offset - bases_.at(buffer);
  const std::string key = fmt::format("{}:{}:{}:{}", buffer, offset, tensor.shape().to_string(),
                                      static_cast<int>(tensor.dtype()));
  if (auto it = value_of_.find(key); it != value_of_.end()) return it->second;
  graph_.values.push_back(Value{.buffer = buffer, .offset = offset, .shape = tensor.shape(), .dtype = tensor.dtype()});
  const int value = static_cast<int>(graph_.values.size()) - 1;
  value_of_.emplace(key, value);
  return value;
}

int Tracer::input_value(const Tensor& tensor, const std::string& op, size_t position) {
  if (!tensor.defined() || tensor.dtype() == kString || tensor.impl()->sharding != nullptr) {
    fail(fmt::format("'{}' reads input {} that is undefined, a string tensor or a sharded block", op, position));
    return -1;
  }
  const TensorImpl& impl = *tensor.impl();
  const Storage* storage = impl.storage.get();
  if (auto made = made_here_.find(storage); made != made_here_.end()) {
    fail(fmt::format("'{}' reads input {} ({} {}), which no traced kernel wrote: an op with no compiled form made it{}",
                     op, position, tensor.shape().to_string(), dtype_name(tensor.dtype()),
                     made->second.empty() ? "" : fmt::format(" in layer '{}'", made->second)));
    return -1;
  }
  auto it = buffer_of_.find(storage);
  const int buffer = it != buffer_of_.end() ? it->second : add_buffer(BufferKind::kExternal, impl);
  if (impl.offset < bases_.at(buffer) || impl.offset - bases_.at(buffer) + tensor.nbytes() > graph_.buffers[buffer].nbytes) {
    fail(fmt::format("'{}' reads input {} outside the argument it views", op, position));
    return -1;
  }
  return add_value(buffer, tensor);
}

int Tracer::output_value(const Tensor& tensor, const std::string& op) {
  const TensorImpl& impl = *tensor.impl();
  const Storage* storage = impl.storage.get();
  if (made_here_.erase(storage) > 0) return add_value(add_buffer(BufferKind::kIntermediate, impl), tensor);
  auto it = buffer_of_.find(storage);
  const int buffer = it != buffer_of_.end() ? it->second : add_buffer(BufferKind::kExternal, impl);
  const BufferKind kind = graph_.buffers[buffer].kind;
  if (kind == BufferKind::kArgument || kind == BufferKind::kConstant) {
    fail(fmt::format("'{}' writes into {}", op, kind == BufferKind::kArgument ? "an argument" : "a constant"));
    return -1;
  }
  return add_value(buffer, tensor);
}

void Tracer::record(Node node, std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  if (!failure_.empty()) return;
  if (!layers_.empty()) node.layer = layers_.back();
  for (size_t i = 0; i < inputs.size(); ++i) node.inputs.push_back(input_value(inputs[i], node.op, i));
  for (const Tensor& out : outputs) node.outputs.push_back(output_value(out, node.op));
  if (failure_.empty()) graph_.nodes.push_back(std::move(node));
}

Graph Tracer::finish(std::span<const Tensor> results) {
  for (size_t r = 0; r < results.size(); ++r) graph_.results.push_back(input_value(results[r], "return", r));
  if (!failure_.empty()) throw_error<ValueError>("jit: cannot trace '{}': {}", graph_.name, failure_);
  return std::move(graph_);
}

void Tracer::allocated(const Storage& storage) {
  buffer_of_.erase(&storage);  // a freed intermediate's address, reused
  made_here_[&storage] = layers_.empty() ? std::string() : layers_.back();
}

void Tracer::made_constant(const Tensor& tensor) {
  if (made_here_.erase(tensor.impl()->storage.get()) > 0) add_buffer(BufferKind::kConstant, *tensor.impl());
}

void Tracer::read_on_host(const Tensor& tensor, const char* how) {
  auto it = buffer_of_.find(tensor.impl()->storage.get());
  if (it != buffer_of_.end() && graph_.buffers[it->second].kind != BufferKind::kConstant) {
    fail(fmt::format("the host reads a traced tensor's values ({} of a {} tensor): control flow on tensor values "
                     "cannot be one static graph",
                     how, tensor.shape().to_string()));
  }
}

void launch_unary(const char* op, backend::cpu::UnaryOp code, const Tensor& x, const Tensor& out,
                  backend::cpu::KernelParams params) {
  backend::cpu::unary(code, x, out, params);
  if (Tracer* tracer = Tracer::current()) [[unlikely]] {
    const Tensor io[] = {x, out};
    tracer->record(Node{.op = op, .kind = NodeKind::kUnary, .unary = code, .params = params}, {io, 1}, {io + 1, 1});
  }
}

void launch_binary(const char* op, backend::cpu::BinaryOp code, const Tensor& a, const Tensor& b, const Tensor& out,
                   backend::cpu::KernelParams params) {
  backend::cpu::binary(code, a, b, out, params);
  if (Tracer* tracer = Tracer::current()) [[unlikely]] {
    const Tensor io[] = {a, b, out};
    tracer->record(Node{.op = op, .kind = NodeKind::kBinary, .binary = code, .params = params}, {io, 2}, {io + 2, 1});
  }
}

}  // namespace chorus::jit
