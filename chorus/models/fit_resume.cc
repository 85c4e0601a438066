// Trainer::fit_state and resume_fit: what a fit carries from one step to the next, taken
// from a callback and given back to a later fit (BackupAndRestore).
#include <algorithm>
#include <unordered_set>

#include "chorus/core/error.h"
#include "chorus/layers/dropout.h"
#include "chorus/models/callback_list.h"
#include "chorus/models/object_paths.h"
#include "chorus/models/trainer.h"

namespace chorus::models {
namespace {

// Every Dropout under `layer` (itself included), once each, depth first in layer order.
void collect_dropouts(layers::Layer& layer, std::unordered_set<layers::Layer*>& seen,
                      std::vector<layers::Dropout*>& out) {
  if (!seen.insert(&layer).second) return;
  if (auto* dropout = dynamic_cast<layers::Dropout*>(&layer)) out.push_back(dropout);
  for (layers::Layer* sublayer : layer.layers()) collect_dropouts(*sublayer, seen, out);
}

// The model's Dropout layers (a model is never one itself).
std::vector<layers::Dropout*> dropouts_of(const Model& model) {
  std::unordered_set<layers::Layer*> seen;
  std::vector<layers::Dropout*> out;
  for (layers::Layer* layer : model.layers()) collect_dropouts(*layer, seen, out);
  return out;
}

}  // namespace

FitState Trainer::fit_state() const {
  const std::string& name = model_.name();
  if (progress_ == nullptr) throw_error<ValueError>("{}: fit_state() is for callbacks while fit runs", name);
  const FitProgress& progress = *progress_;
  if (progress.validating) {
    throw_error<ValueError>("{}: fit_state() during validation: take it from a training hook", name);
  }
  if (const StepFunctions* steps = model_.step_functions(); steps != nullptr && steps->worker_states_pending()) {
    throw_error<ValueError>(
        "{}: fit_state() mid-epoch in a multi-worker fit needs the workers' metrics merged after every step: the "
        "callback calling it must implement the training batch hooks",
        name);
  }
  FitState state;
  state.total_steps = progress.total_steps;
  state.epoch = progress.epoch_ended ? progress.epoch + 1 : progress.epoch;
  if (!progress.epoch_ended) {
    state.step = progress.step;
    for (const metrics::Metric* m : model_.metrics()) {
      state.metric_states.insert(state.metric_states.end(), m->state().begin(), m->state().end());
    }
  }
  if (const auto& iterator = *progress.iterator) {
    state.pass = iterator->epoch();
    state.position = iterator->position();
  }
  const optimizers::Optimizer& optimizer = model_.optimizer();
  if (!optimizer.learning_rate_spec().is_schedule()) state.learning_rate = optimizer.learning_rate();
  const auto layer_paths = layer_object_paths(model_);  // not global names: another instance resumes from it
  for (const layers::Dropout* d : dropouts_of(model_)) {
    const auto path = layer_paths.find(d);
    state.dropout_calls.emplace_back(path == layer_paths.end() ? d->path() : path->second, d->call_count());
  }
  state.callbacks = progress.callbacks->get_states();
  return state;
}

void Trainer::resume_fit(FitState state) {
  if (progress_ == nullptr || !progress_->in_train_begin) {
    throw_error<ValueError>("{}: resume_fit() is for a callback's on_train_begin", model_.name());
  }
  resume_ = std::move(state);
}

std::optional<FitState> Trainer::apply_resume(FitProgress& progress, const WorkerInput& input) {
  std::optional<FitState> state = std::exchange(resume_, std::nullopt);
  if (!state) return std::nullopt;
  const std::string& name = model_.name();
  if (input.file_sharded()) {
    throw_error<ValueError>(
        "{}: resuming a fit whose workers read their own files (FILE sharding) is not supported yet; shard by data "
        "(data::AutoShardPolicy::kData) to resume",
        name);
  }
  if (state->step > 0 && !state->pass) {
    throw_error<ValueError>("{}: the saved fit state is mid-epoch (step {}) but has no data position", name, state->step);
  }
  std::vector<layers::Dropout*> dropouts = dropouts_of(model_);
  if (dropouts.size() != state->dropout_calls.size()) {
    throw_error<ValueError>("{}: the saved fit state has the random streams of {} Dropout layers, but the model has {}",
                            name, state->dropout_calls.size(), dropouts.size());
  }
  for (size_t i = 0; i < dropouts.size(); ++i) dropouts[i]->set_call_count(state->dropout_calls[i].second);
  optimizers::Optimizer& optimizer = model_.optimizer();
  if (state->learning_rate && !optimizer.learning_rate_spec().is_schedule()) {
    optimizer.set_learning_rate(*state->learning_rate);
  }
  progress.callbacks->set_states(state->callbacks);
  progress.epoch = state->epoch;
  progress.total_steps = state->total_steps;
  if (state->pass) {
    progress.iterator->emplace(input.pass(*state->pass));
    (*progress.iterator)->restore(state->position);
  }
  return state;
}

void Trainer::set_metric_states(const std::vector<double>& states) {
  const std::vector<metrics::Metric*> all = model_.metrics();
  size_t size = 0;
  for (const metrics::Metric* m : all) size += m->state().size();
  if (states.size() != size) {
    throw_error<ValueError>("{}: the saved metric states hold {} values, but this model's {} metrics hold {}", model_.name(),
                            states.size(), all.size(), size);
  }
  size_t at = 0;
  for (metrics::Metric* m : all) {
    m->reset_state();
    m->merge_state(std::span<const double>(states).subspan(at, m->state().size()));
    at += m->state().size();
  }
}

}  // namespace chorus::models
