#include "chorus/layers/dropout.h"

#include <algorithm>
#include <cmath>

#include "chorus/backend/cpu/random_kernels.h"
#include "chorus/core/creation.h"
#include "chorus/jit/tracer.h"
#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"
#include "chorus/step/replica_context.h"

namespace chorus::layers {
namespace {

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

// Fills `mask` (float32 or bfloat16): 0 with probability `rate`, else 1 / (1 - rate).
// Element i is decided by word j % 4 of Philox block j / 4 under `key`, j = first + i, so
// the mask does not depend on the thread count, and a replica's slice of a global batch
// (first = its first element) gets its part of the one global mask.
void fill_mask(const Tensor& mask, uint64_t key, double rate, int64_t first) {
  const float keep_scale = rate >= 1 ? 0.0f : static_cast<float>(1.0 / (1.0 - rate));  // 0, not 0 * inf
  // With u = k / 2^24 for the top 24 bits k of a word: u < rate  <=>  k < ceil(rate * 2^24).
  const auto threshold = static_cast<uint32_t>(std::ceil(rate * 16777216.0));
  if (mask.dtype() == kFloat32) {
    backend::cpu::dropout_mask(key, first, threshold, keep_scale, mask.data<float>(), mask.numel());
  } else {
    backend::cpu::dropout_mask(key, first, threshold, keep_scale, mask.data<bfloat16>(), mask.numel());
  }
}

}  // namespace

Dropout::Dropout(double rate, DropoutOptions options)
    : Layer("Dropout", options.name),
      rate_(rate),
      options_(std::move(options)),
      generator_(options_.seed ? Generator(*options_.seed) : next_generator()) {
  if (!(rate >= 0 && rate <= 1)) {
    throw_error<ValueError>("Dropout: expected rate in [0, 1]. Received: rate={}", rate);
  }
  for (int64_t d : options_.noise_shape) {
    if (d <= 0 && d != -1) {
      throw_error<ValueError>("Dropout: expected noise_shape entries > 0 or -1 (None). Received: noise_shape={}",
                              dims_string(options_.noise_shape));
    }
  }
}

Dropout::Dropout(Dropout&& other) noexcept
    : Layer(std::move(other)),
      rate_(other.rate_),
      options_(std::move(other.options_)),
      generator_(other.generator_),
      calls_(other.calls_.load()) {}

Shape Dropout::mask_shape(const Shape& input) const {
  const auto& noise = options_.noise_shape;
  if (noise.empty()) return input;
  bool ok = static_cast<int>(noise.size()) == input.rank();
  Shape shape = input;
  for (int i = 0; ok && i < input.rank(); ++i) {
    if (noise[i] == -1) continue;
    ok = noise[i] == 1 || noise[i] == input[i];
    shape[i] = noise[i];
  }
  if (!ok) {
    throw_error<ShapeError>("{}: noise_shape {} does not broadcast to inputs of shape {}", name(), dims_string(noise),
                            input.to_string());
  }
  return shape;
}

Tensor Dropout::draw_mask(const Shape& shape, DType dtype) {
  // One device: call k draws the mask of sub-stream k. In a data-parallel step every
  // replica numbers its calls from the layer's count at the step's start, so call i of
  // the step draws sub-stream base + i on every replica, as one device would, and takes
  // the rows of its slice of that global mask: the masks do not depend on how the batch
  // is split, nor on whether it is split at all. A node of its own in a compiled step,
  // which draws the next call's mask at every run.
  Tensor mask = Tensor::empty(shape, dtype);
  jit::launch_host("dropout_mask", {}, std::span(&mask, 1), [this](auto, auto out) {
    auto* replica = step::ReplicaContext::current();
    if (replica == nullptr) {
      fill_mask(out[0], generator_.fork(calls_.fetch_add(1)).key(), rate_, 0);
      return;
    }
    const uint64_t index = replica->call_in_step(this);
    uint64_t call;
    {
      std::lock_guard lock(step_mutex_);
      if (!step_base_ || step_base_->first != replica->step()) step_base_.emplace(replica->step(), calls_.load());
      call = step_base_->second + index;
      if (calls_.load() < call + 1) calls_.store(call + 1);
    }
    const Shape& shape = out[0].shape();
    int64_t first = 0;
    if (shape.rank() > 0 && shape[0] == replica->local_rows() && shape[0] > 0) {
      first = replica->row_offset() * (shape.numel() / shape[0]);
    }
    fill_mask(out[0], generator_.fork(call).key(), rate_, first);
  });
  return mask;
}

Tree Dropout::call(const Tree& inputs, bool training) {
  const Tensor& x = detail::single_input(inputs, name());
  const Shape shape = mask_shape(x.shape());
  if (!training || rate_ == 0) return detail::identity(x);
  if (!is_floating(x.dtype())) {
    throw_error<DTypeError>("{}: expected floating inputs, got {}", name(), dtype_name(x.dtype()));
  }
  return x * draw_mask(shape, x.dtype());
}

nlohmann::json Dropout::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["rate"] = rate_;
  config["seed"] = options_.seed ? nlohmann::json(*options_.seed) : nlohmann::json(nullptr);
  if (options_.noise_shape.empty()) {
    config["noise_shape"] = nullptr;
  } else {
    nlohmann::json noise = nlohmann::json::array();
    for (int64_t d : options_.noise_shape) noise.push_back(d == -1 ? nlohmann::json(nullptr) : nlohmann::json(d));
    config["noise_shape"] = noise;
  }
  return config;
}

std::shared_ptr<Dropout> Dropout::from_config(const nlohmann::json& config) {
  ConfigReader r("Dropout", config);
  DropoutOptions options;
  options.noise_shape = detail::dims_or_null(r, "noise_shape");
  options.seed = r.optional<uint64_t>("seed");
  options.name = detail::config_name(r);
  auto layer = std::make_shared<Dropout>(r.number("rate", 0.0), std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
