#include "chorus/layers/batch_normalization.h"

#include "chorus/autograd/tape.h"
#include "chorus/jit/tracer.h"
#include "chorus/layers/layer_util.h"
#include "chorus/ops/ops.h"
#include "chorus/step/replica_context.h"

namespace chorus::layers {

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : Layer("BatchNormalization", options.name), options_(std::move(options)) {
  set_autocast(false);  // computes in float32 whatever the policy; returns the input's dtype
  if (!(options_.epsilon >= 0)) {
    throw_error<ValueError>("BatchNormalization: expected epsilon >= 0. Received: epsilon={}", options_.epsilon);
  }
  if (!(options_.momentum >= 0 && options_.momentum <= 1)) {
    throw_error<ValueError>("BatchNormalization: expected momentum in [0, 1]. Received: momentum={}",
                            options_.momentum);
  }
}

void BatchNormalization::build(const Tree& inputs) {
  const Tensor& x = detail::single_input(inputs, name());
  if (options_.axis < -x.rank() || options_.axis >= x.rank()) {
    throw_error<IndexError>("{}: axis {} is out of range for inputs of shape {}", name(), options_.axis,
                            x.shape().to_string());
  }
  rank_ = x.rank();
  axis_ = options_.axis < 0 ? options_.axis + rank_ : options_.axis;
  const Shape shape{x.shape()[axis_]};
  set_input_spec(InputSpec{.ndim = rank_, .axes = {{options_.axis, shape[0]}}});
  if (options_.scale) gamma_ = add_weight("gamma", shape, options_.gamma_initializer);
  if (options_.center) beta_ = add_weight("beta", shape, options_.beta_initializer);
  moving_mean_ = add_weight("moving_mean", shape, options_.moving_mean_initializer, /*trainable=*/false);
  moving_variance_ = add_weight("moving_variance", shape, options_.moving_variance_initializer, /*trainable=*/false);
}

void BatchNormalization::update_moving_statistics(const Tensor& mean, const Tensor& variance) const {
  // A host node of its own in a compiled step: the new statistics are assigned at every run.
  const Tensor batch_statistics[] = {mean, variance};
  jit::launch_host("update_moving_statistics", batch_statistics, {}, [this](auto in, auto) {
    autograd::NoGradGuard no_grad;  // the moving statistics are not part of the loss
    const double m = options_.momentum;
    const std::vector<int64_t> channels{moving_mean_.shape()[0]};
    Tensor new_mean = moving_mean_.value() * m + ops::reshape(in[0], channels) * (1.0 - m);
    Tensor new_variance = moving_variance_.value() * m + ops::reshape(in[1], channels) * (1.0 - m);
    // Replicas share the variables: each offers its slice's update and the step applies
    // their row-weighted mean (TF's MirroredStrategy averages the replicas' updates too).
    if (auto* replica = step::ReplicaContext::current()) {
      replica->assign_mean(moving_mean_, new_mean);
      replica->assign_mean(moving_variance_, new_variance);
    } else {
      moving_mean_.assign(new_mean);
      moving_variance_.assign(new_variance);
    }
  });
}

Tree BatchNormalization::call(const Tree& inputs, bool training) {
  const Tensor& input = detail::single_input(inputs, name());  // rank rank_, C on axis_: input_spec()
  const int64_t channels = moving_mean_.shape()[0];
  const Tensor x = input.dtype() == kFloat32 ? input : ops::cast(input, kFloat32);
  // Statistics shaped to broadcast: (1, ..., C, ..., 1).
  std::vector<int64_t> stat_shape(static_cast<size_t>(rank_), 1);
  stat_shape[axis_] = channels;
  Tensor mean, variance;
  if (training && trainable()) {
    std::vector<int> reduce;
    for (int a = 0; a < rank_; ++a) {
      if (a != axis_) reduce.push_back(a);
    }
    mean = ops::mean(x, reduce, /*keepdims=*/true);
    variance = ops::mean(ops::square(x - mean), reduce, /*keepdims=*/true);  // biased, as Keras
    if (x.numel() > 0) update_moving_statistics(mean, variance);
  } else {
    mean = ops::reshape(moving_mean_.value(), stat_shape);
    variance = ops::reshape(moving_variance_.value(), stat_shape);
  }
  Tensor y = (x - mean) * ops::rsqrt(variance + options_.epsilon);
  if (gamma_.defined()) y = y * ops::reshape(gamma_.value(), stat_shape);
  if (beta_.defined()) y = y + ops::reshape(beta_.value(), stat_shape);
  return input.dtype() == kFloat32 ? y : ops::cast(y, input.dtype());
}

nlohmann::json BatchNormalization::get_config() const {
  nlohmann::json config = Layer::get_config();
  config["axis"] = options_.axis;
  config["momentum"] = options_.momentum;
  config["epsilon"] = options_.epsilon;
  config["center"] = options_.center;
  config["scale"] = options_.scale;
  config["beta_initializer"] = options_.beta_initializer.get_config();
  config["gamma_initializer"] = options_.gamma_initializer.get_config();
  config["moving_mean_initializer"] = options_.moving_mean_initializer.get_config();
  config["moving_variance_initializer"] = options_.moving_variance_initializer.get_config();
  return config;
}

std::shared_ptr<BatchNormalization> BatchNormalization::from_config(const nlohmann::json& config) {
  ConfigReader r("BatchNormalization", config);
  BatchNormalizationOptions options;
  options.axis = r.value<int>("axis", -1);
  options.momentum = r.number("momentum", 0.99);
  options.epsilon = r.number("epsilon", 1e-3);
  options.center = r.boolean("center", true);
  options.scale = r.boolean("scale", true);
  for (auto [key, out] : {std::pair{"beta_initializer", &options.beta_initializer},
                          std::pair{"gamma_initializer", &options.gamma_initializer},
                          std::pair{"moving_mean_initializer", &options.moving_mean_initializer},
                          std::pair{"moving_variance_initializer", &options.moving_variance_initializer}}) {
    detail::read_initializer(r, key, *out);
  }
  r.accept_inert({"beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint"});
  r.accept_inert({"synchronized"}, false);
  options.name = detail::config_name(r);
  auto layer = std::make_shared<BatchNormalization>(std::move(options));
  detail::finish_config(*layer, r);
  return layer;
}

}  // namespace chorus::layers
