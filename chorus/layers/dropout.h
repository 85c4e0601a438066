// Dropout: during training, zeroes each input element with probability `rate` and scales
// the rest by 1 / (1 - rate) (keras.layers.Dropout); the identity in inference. Safe to
// call from several threads: each call takes the next mask from an atomic call counter
// (its own Philox sub-stream), so a seeded Dropout gives the same masks for the same
// sequence of calls.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chorus/core/random.h"
#include "chorus/layers/layer.h"

namespace chorus::layers {

struct DropoutOptions {
  // The shape of the mask, broadcast over the inputs (e.g. {-1, 1, -1} drops whole
  // timesteps of (B, T, C) inputs); -1 takes the input's dimension (Keras's None).
  // Empty (the default): the input's shape.
  std::vector<int64_t> noise_shape;
  // Default: a generator forked from the process-wide stream at construction
  // (set_random_seed() makes it reproducible).
  std::optional<uint64_t> seed;
  std::string name;  // empty: "dropout", "dropout_1", ...
};

// Input: any shape, floating. Output: the same shape.
//
//   layers::Dropout drop(0.2);
//   Tensor y = drop(x, /*training=*/true);
class Dropout : public Layer {
 public:
  // Throws ValueError unless 0 <= rate <= 1 and every noise_shape entry is > 0 or -1.
  explicit Dropout(double rate, DropoutOptions options = {});
  Dropout(Dropout&& other) noexcept;

  double rate() const { return rate_; }
  // How many masks have been drawn; restoring it (with the seed) resumes the sequence,
  // e.g. from a checkpoint.
  uint64_t call_count() const { return calls_.load(); }
  void set_call_count(uint64_t count) { calls_.store(count); }

  // The multipliers a training call on floating inputs of `shape` applies (0 with
  // probability rate, else 1 / (1 - rate)), drawn as call() draws them: the next mask of
  // this layer's sequence, or this replica's slice of the step's mask. For layers that
  // apply dropout inside a fused op (MultiHeadAttention). noise_shape is not applied.
  // Safe to call from several threads. REQUIRES: dtype float32 or bfloat16.
  Tensor draw_mask(const Shape& shape, DType dtype = kFloat32);

  nlohmann::json get_config() const override;
  static std::shared_ptr<Dropout> from_config(const nlohmann::json& config);
  std::shared_ptr<Layer> move_to_heap() && override { return std::make_shared<Dropout>(std::move(*this)); }

 protected:
  // Throws ShapeError naming the layer if noise_shape does not broadcast to the inputs.
  Tree call(const Tree& inputs, bool training) override;

 private:
  Shape mask_shape(const Shape& input) const;

  double rate_;
  DropoutOptions options_;
  Generator generator_;  // the base stream; call k uses generator_.fork(k)
  std::atomic<uint64_t> calls_{0};
  // In data-parallel steps: (step, calls_ when it began), guarded by step_mutex_.
  std::mutex step_mutex_;
  std::optional<std::pair<uint64_t, uint64_t>> step_base_;
};

}  // namespace chorus::layers
