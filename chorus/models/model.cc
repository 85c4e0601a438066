#include "chorus/models/model.h"

#include <algorithm>
#include <iostream>

#include "chorus/core/error.h"
#include "chorus/distribution/distribution.h"
#include "chorus/metrics/mean.h"
#include "chorus/models/functional_graph.h"
#include "chorus/models/jit_steps.h"
#include "chorus/models/step_functions.h"
#include "chorus/step/step_context.h"

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
  optimizer_->set_gradient_aggregator(distribution_ ? std::make_shared<const step::GradientAggregator>() : nullptr);
  if (StepFunctions* steps = step_functions()) steps->release_placement();
  set_step_functions(nullptr);
  jit_.clear();
  jit_owner_ = nullptr;
  reset_metrics();
}

void Model::set_jit_compile(bool jit_compile) {
  compile_options_.jit_compile = jit_compile;
  jit_.clear();
  jit_owner_ = nullptr;
}

optimizers::Optimizer& Model::optimizer() const {
  if (!optimizer_) throw_error<ValueError>("{}: the model has no optimizer; call compile() first", name());
  return *optimizer_;
}

std::vector<metrics::Metric*> Model::metrics() const {
  std::vector<metrics::Metric*> out;
  if (const step::StepContext* step = step::StepContext::current(); step != nullptr && !step->metrics.empty()) {
    for (const auto& m : step->metrics) out.push_back(m.get());
    return out;
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
  if (StepFunctions* steps = step_functions()) steps->reset_worker_states();
}

void Model::set_step_functions(std::unique_ptr<StepFunctions> steps) {
  steps_ = std::move(steps);
  steps_owner_ = this;
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
