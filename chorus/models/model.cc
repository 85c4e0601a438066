#include "chorus/models/model.h"

#include <algorithm>
#include <iostream>

#include "chorus/core/error.h"
#include "chorus/distribute/distribution.h"
#include "chorus/distribute/replica_context.h"
#include "chorus/metrics/mean.h"
#include "chorus/models/distributed_steps.h"
#include "chorus/models/functional_graph.h"
#include "chorus/models/trainer.h"

namespace chorus::models {

Model::Model(std::string name) : Layer("Model", std::move(name)) { set_cast_inputs(false); }
Model::Model(std::string class_name, std::string name) : Layer(std::move(class_name), std::move(name)) {
  set_cast_inputs(false);
}

Model::Model(const Tree& inputs, const Tree& outputs, std::string name) : Layer("Functional", std::move(name)) {
  set_cast_inputs(false);
  graph_ = std::make_unique<FunctionalGraph>(inputs, outputs, this->name());
  for (layers::Layer* layer : graph_->layers()) track_borrowed(layer);
  build_from(inputs);
}

Model::~Model() = default;
Model::Model(Model&&) noexcept = default;

std::shared_ptr<layers::Layer> Model::move_to_heap() && {
  if (!graph_) return std::move(*this).Layer::move_to_heap();  // a subclass must move itself
  return std::make_shared<Model>(std::move(*this));
}

void Model::build(const Tree& /*inputs*/) {}

Tree Model::call(const Tree& inputs, bool training) {
  if (!graph_) {
    throw_error<Error>("{}: a subclassed Model must override call(const Tree&, bool)", name());
  }
  return graph_->run(inputs, training);
}

void Model::compile(CompileOptions options) {
  if (!options.optimizer) throw_error<ValueError>("{}: compile needs an optimizer", name());
  compile_options_ = options;
  optimizer_ = options.optimizer.shared_ptr();
  loss_ = options.loss.shared_ptr();
  loss_tracker_ = std::make_unique<metrics::Mean>(metrics::MeanOptions{.name = "loss"});
  compiled_metrics_.clear();
  for (const auto& metric : options.metrics) {
    if (!metric) throw_error<ValueError>("{}: compile got an empty metric", name());
    compiled_metrics_.push_back(metric.shared_ptr());
  }
  distribution_ = distribution::distribution();
  // The seam a custom train_step's apply_gradients reduces through under the distribution.
  optimizer_->set_cross_replica(distribution_ ? std::make_shared<const distribute::CrossReplicaGradients>() : nullptr);
  if (steps_) steps_->release_placement();
  steps_.reset();
  reset_metrics();
}

optimizers::Optimizer& Model::optimizer() const {
  if (!optimizer_) throw_error<ValueError>("{}: the model has no optimizer; call compile() first", name());
  return *optimizer_;
}

// The loop is Trainer's; these are Keras's names for it.
History Model::fit(const data::Dataset& data, FitOptions options) {
  return Trainer(*this).fit(data, std::move(options));
}
History Model::fit(const Tree& x, const Tree& y, FitOptions options) {
  return Trainer(*this).fit(x, y, std::move(options));
}
Logs Model::evaluate(const data::Dataset& data, EvaluateOptions options) {
  return Trainer(*this).evaluate(data, options);
}
Logs Model::evaluate(const Tree& x, const Tree& y, EvaluateOptions options) {
  return Trainer(*this).evaluate(x, y, options);
}
Tree Model::predict(const data::Dataset& data, PredictOptions options) {
  return Trainer(*this).predict(data, options);
}
Tree Model::predict(const Tree& x, PredictOptions options) { return Trainer(*this).predict(x, options); }

FitState Model::fit_state() const {
  if (trainer_ == nullptr) throw_error<ValueError>("{}: fit_state() is for callbacks while fit runs", name());
  return trainer_->fit_state();
}

void Model::resume_fit(FitState state) {
  if (trainer_ == nullptr) throw_error<ValueError>("{}: resume_fit() is for a callback's on_train_begin", name());
  trainer_->resume_fit(std::move(state));
}

std::vector<metrics::Metric*> Model::metrics() const {
  std::vector<metrics::Metric*> out;
  if (const auto* replica = distribute::ReplicaContext::current(); replica != nullptr && steps_ != nullptr) {
    if (const auto* copies = steps_->replica_metrics(replica->replica_id())) {
      for (const auto& m : *copies) out.push_back(m.get());
      return out;
    }
  }
  if (loss_tracker_) out.push_back(loss_tracker_.get());
  for (const auto& m : compiled_metrics_) out.push_back(m.get());
  return out;
}

Logs Model::get_metrics_result() const {
  Logs logs;
  for (const metrics::Metric* m : metrics()) logs.set(m->name(), m->result());
  return logs;
}

void Model::reset_metrics() {
  for (metrics::Metric* m : metrics()) m->reset_state();
  if (steps_) steps_->reset_worker_states();
}

DistributedSteps& Model::distributed_steps() {
  if (steps_ == nullptr || &steps_->model() != this) steps_ = std::make_unique<DistributedSteps>(*this);
  return *steps_;
}

nlohmann::json Model::get_config() const {
  if (graph_) {
    nlohmann::json config = graph_->get_config();
    config["name"] = name();
    config["trainable"] = trainable();
    return config;
  }
  return Layer::get_config();
}

}  // namespace chorus::models
