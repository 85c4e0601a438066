// Trainer: the loop of fit, evaluate and predict. The steps it runs are the model's
// (model_steps.cc) under its distribution (DistributedSteps); resuming is fit_resume.cc.
// Model's fit, evaluate and predict, Keras's names for the loop, are defined here too.
#include "chorus/models/trainer.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "chorus/cluster/worker_group.h"
#include "chorus/core/error.h"
#include "chorus/layers/initializers.h"
#include "chorus/models/callback_list.h"
#include "chorus/models/distributed_steps.h"
#include "chorus/models/progbar_logger.h"
#include "chorus/ops/ops.h"

namespace chorus::models {
namespace {

int64_t num_rows(const Tree& tree, const char* what, const std::string& model) {
  std::vector<Tensor> leaves = tree.flatten();
  if (leaves.empty()) throw_error<ValueError>("{}: {} is empty", model, what);
  int64_t rows = -1;
  for (const Tensor& t : leaves) {
    if (t.rank() == 0) throw_error<ShapeError>("{}: {} must have a batch axis, got a scalar", model, what);
    if (rows >= 0 && t.dim(0) != rows) {
      throw_error<ValueError>("{}: the arrays in {} have different numbers of rows: {} and {}", model, what, rows, t.dim(0));
    }
    rows = t.dim(0);
  }
  return rows;
}

Tree slice_rows(const Tree& tree, int64_t begin, int64_t end) {
  return tree.map([&](const Tensor& t) { return t.first_axis_slice(begin, end); });
}

// The dataset fit/evaluate/predict iterate for in-memory arrays, reshuffled each epoch
// from `shuffle_seed` when it is given.
data::Dataset arrays_dataset(const Tree& x, const Tree& y, int64_t batch_size, std::optional<uint64_t> shuffle_seed,
                             const std::string& model) {
  if (batch_size <= 0) throw_error<ValueError>("{}: expected batch_size > 0. Received: batch_size={}", model, batch_size);
  int64_t rows = num_rows(x, "x", model);
  Tree element = x;
  if (!y.empty()) {
    int64_t y_rows = num_rows(y, "y", model);
    if (y_rows != rows) {
      throw_error<ValueError>("{}: x and y have different numbers of rows: {} and {}", model, rows, y_rows);
    }
    element = Tree::list({x, y});
  }
  data::Dataset ds = data::Dataset::from_tensor_slices(element);
  if (shuffle_seed && rows > 1) ds = ds.shuffle(rows, *shuffle_seed, /*reshuffle_each_iteration=*/true);
  return ds.batch(batch_size);
}

int64_t steps_of(const data::Dataset& data, int64_t requested) {
  if (requested > 0) return requested;
  int64_t n = data.cardinality();
  return n >= 0 ? n : -1;
}

// The default callbacks and params of a fit/evaluate/predict call.
CallbackList make_callbacks(const std::vector<Shared<Callback>>& user, Model* model, const CallbackParams& params,
                            std::shared_ptr<History> history) {
  CallbackList list(user, model, params);
  // Like Keras, a History or progress bar the user passed replaces the default one.
  auto user_has = [&](auto* type) {
    using T = std::remove_pointer_t<decltype(type)>;
    return std::any_of(user.begin(), user.end(), [](const Shared<Callback>& c) { return dynamic_cast<T*>(c.get()) != nullptr; });
  };
  if (history && !user_has(static_cast<History*>(nullptr))) list.add(std::move(history));
  if (params.verbose > 0 && !user_has(static_cast<ProgbarLogger*>(nullptr))) list.add(std::make_shared<ProgbarLogger>());
  return list;
}

void check_fit_options(const std::string& model, const data::Dataset& data, const FitOptions& options) {
  if (options.epochs < 0 || options.initial_epoch < 0) {
    throw_error<ValueError>("{}: expected epochs >= 0 and initial_epoch >= 0. Received: epochs={}, initial_epoch={}",
                            model, options.epochs, options.initial_epoch);
  }
  if (options.validation_freq <= 0) {
    throw_error<ValueError>("{}: expected validation_freq > 0. Received: validation_freq={}", model, options.validation_freq);
  }
  if (data.cardinality() == data::kInfiniteCardinality && options.steps_per_epoch <= 0) {
    throw_error<ValueError>("{}: the training data is infinite; give steps_per_epoch", model);
  }
}

}  // namespace

History Trainer::fit(const Tree& x, const Tree& y, FitOptions options) {
  const std::string& name = model_.name();
  if (options.validation_split < 0 || options.validation_split >= 1) {
    throw_error<ValueError>("{}: expected 0 <= validation_split < 1. Received: validation_split={}", name,
                            options.validation_split);
  }
  Tree train_x = x, train_y = y;
  if (options.validation_split > 0) {
    if (options.validation_data) {
      throw_error<ValueError>("{}: give validation_data or validation_split, not both", name);
    }
    int64_t rows = num_rows(x, "x", name);
    int64_t split = static_cast<int64_t>(std::floor(static_cast<double>(rows) * (1.0 - options.validation_split)));
    train_x = slice_rows(x, 0, split);
    train_y = y.empty() ? y : slice_rows(y, 0, split);
    options.validation_data = arrays_dataset(slice_rows(x, split, rows), y.empty() ? y : slice_rows(y, split, rows),
                                             options.batch_size, std::nullopt, name);
  }
  std::optional<uint64_t> shuffle_seed;
  if (options.shuffle) {
    shuffle_seed = layers::next_generator().key();
    // Each worker of a job takes its rows of the same global batches, so the order is the
    // job's: rank 0's draw (the ranks' layer streams may differ, in seed or in draws).
    if (cluster::WorkerGroup* workers = step_functions().workers()) {
      shuffle_seed = workers->chief_value(*shuffle_seed);
    }
  }
  return fit(arrays_dataset(train_x, train_y, options.batch_size, shuffle_seed, name), std::move(options));
}

History Trainer::fit(const data::Dataset& data, FitOptions options) {
  if (!model_.compiled()) throw_error<ValueError>("{}: call compile() before fit()", model_.name());
  check_fit_options(model_.name(), data, options);
  const int64_t steps = steps_of(data, options.steps_per_epoch);
  auto history = std::make_shared<History>();
  for (const auto& c : options.callbacks) {
    if (auto user_history = std::dynamic_pointer_cast<History>(c.shared_ptr())) history = user_history;
  }
  CallbackList callbacks = make_callbacks(options.callbacks, &model_, {options.epochs, steps, options.verbose}, history);
  model_.stop_training = false;
  const WorkerInput input(data, step_functions().workers(), model_.name());
  // With steps_per_epoch, one iterator runs on across epochs (Keras); a new one starts
  // only when the data runs out.
  std::optional<WorkerInput::Pass> iterator;
  FitProgress progress{.epoch = options.initial_epoch, .iterator = &iterator, .callbacks = &callbacks};
  progress_ = &progress;
  // The fit's callbacks answer to this trainer until it ends; one that also serves an
  // outer fit (this one started inside its hook) is handed back to it.
  struct EndOfFit {
    Trainer* trainer;
    std::vector<std::pair<Callback*, FitControl*>> outer;
    ~EndOfFit() {
      for (auto [callback, fit] : outer) callback->set_fit(fit);
      trainer->progress_ = nullptr;
    }
  } end_of_fit{this, {}};
  callbacks.each([&](Callback& c) {
    end_of_fit.outer.emplace_back(&c, c.running_fit());
    c.set_fit(this);
  });
  // As Keras's fit builds an unbuilt model before any callback runs (trainer.py,
  // _symbolic_build), so that BackupAndRestore restores into a subclassed model too.
  if (!model_.built()) {
    if (std::optional<Tree> first = data.iterator().next()) model_.build_on_first_row(*first);
  }
  Logs logs;
  callbacks.each([&](Callback& c) { c.on_train_begin(logs); });
  progress.in_train_begin = false;
  const std::optional<FitState> resumed = apply_resume(progress, input);
  // A multi-worker job merges the workers' metrics after each step only for callbacks
  // that read batch logs (verbose 1 does); otherwise once an epoch, sparing a collective
  // per step.
  const bool batch_logs =
      step_functions().merge_every_step(callbacks.any(&Callback::implements_train_batch_hooks));
  for (int epoch = progress.epoch; epoch < options.epochs && !model_.stop_training; ++epoch) {
    progress.epoch = epoch;
    logs = run_epoch(progress, input, resumed, options, steps, batch_logs);
    progress.epoch_ended = true;
    callbacks.each([&](Callback& c) { c.on_epoch_end(epoch, logs); });
    progress.epoch_ended = false;
  }
  callbacks.each([&](Callback& c) { c.on_train_end(logs); });
  return *history;
}

Logs Trainer::run_epoch(FitProgress& progress, const WorkerInput& input, const std::optional<FitState>& resumed,
                        const FitOptions& options, int64_t steps, bool batch_logs) {
  const int epoch = progress.epoch;
  std::optional<WorkerInput::Pass>& iterator = *progress.iterator;
  model_.reset_metrics();
  // Resumed mid-epoch: the interrupted epoch's metrics and iterator carry on.
  const bool mid_epoch = resumed && epoch == resumed->epoch && resumed->step > 0;
  if (mid_epoch) set_metric_states(resumed->metric_states);
  progress.step = mid_epoch ? resumed->step : 0;
  progress.callbacks->each([&](Callback& c) { c.on_epoch_begin(epoch, Logs{}); });
  if (!mid_epoch && (!iterator || options.steps_per_epoch <= 0)) iterator.emplace(input.pass(epoch));
  const Logs last = run_epoch_steps(progress, steps, batch_logs);
  step_functions().merge_worker_metrics();
  Logs logs = metrics_result_or(last);
  if (!batch_logs && logs.contains("loss") && !std::isfinite(logs.at("loss"))) {
    throw_error<Error>("{}: the loss became {} during epoch {}; add callbacks::TerminateOnNaN to stop at the batch",
                       model_.name(), logs.at("loss"), epoch + 1);
  }
  if (options.validation_data && (epoch + 1) % options.validation_freq == 0) {
    progress.validating = true;
    Logs val = run_evaluation(*options.validation_data, options.validation_steps, *progress.callbacks);
    progress.validating = false;
    logs.merge(val, "val_");
  }
  return logs;
}

Logs Trainer::metrics_result_or(const Logs& last_step_logs) const {
  Logs metric_logs = model_.get_metrics_result();
  if (last_step_logs.empty()) return metric_logs;
  std::set<std::string> step_names, metric_names;
  for (const auto& entry : last_step_logs) step_names.insert(entry.first);
  for (const auto& entry : metric_logs) metric_names.insert(entry.first);
  return step_names == metric_names ? metric_logs : last_step_logs;
}

Logs Trainer::run_epoch_steps(FitProgress& progress, int64_t steps, bool batch_logs) {
  std::optional<WorkerInput::Pass>& iterator = *progress.iterator;
  CallbackList& callbacks = *progress.callbacks;
  Logs last;
  while (steps < 0 || progress.step < steps) {
    std::optional<WorkerInput::Step> batch = iterator->next();
    if (!batch) {
      iterator.reset();
      break;
    }
    const int64_t step = progress.step;
    callbacks.each([&](Callback& c) { c.on_train_batch_begin(step, Logs{}); });
    Logs step_logs = step_functions().train(*batch, batch_logs);
    ++progress.step;
    ++progress.total_steps;
    callbacks.each([&](Callback& c) { c.on_train_batch_end(step, step_logs); });
    last = std::move(step_logs);  // moved, not copied: this runs every step
    if (model_.stop_training) break;
    if (last.contains("loss") && !std::isfinite(last.at("loss"))) {
      throw_error<Error>("{}: the loss became {} at epoch {}, batch {}; add callbacks::TerminateOnNaN to stop instead",
                         model_.name(), last.at("loss"), progress.epoch + 1, step);
    }
  }
  return last;
}

Logs Trainer::run_evaluation(const data::Dataset& data, int64_t steps, CallbackList& callbacks) {
  StepFunctions& distributed = step_functions();
  model_.reset_metrics();
  Logs logs;
  callbacks.each([&](Callback& c) { c.on_test_begin(logs); });
  const WorkerInput input(data, distributed.workers(), model_.name());
  const bool batch_logs = distributed.merge_every_step(callbacks.any(&Callback::implements_test_batch_hooks));
  auto iterator = input.pass(0);
  for (int64_t step = 0; steps < 0 || step < steps; ++step) {
    std::optional<WorkerInput::Step> batch = iterator.next();
    if (!batch) break;
    callbacks.each([&](Callback& c) { c.on_test_batch_begin(step, Logs{}); });
    logs = distributed.test(*batch, batch_logs);
    callbacks.each([&](Callback& c) { c.on_test_batch_end(step, logs); });
  }
  distributed.merge_worker_metrics();
  logs = metrics_result_or(logs);
  callbacks.each([&](Callback& c) { c.on_test_end(logs); });
  return logs;
}

Logs Trainer::evaluate(const data::Dataset& data, const EvaluateOptions& options) {
  if (!model_.compiled()) throw_error<ValueError>("{}: call compile() before evaluate()", model_.name());
  CallbackList callbacks =
      make_callbacks(options.callbacks, &model_, {1, steps_of(data, options.steps), options.verbose}, nullptr);
  return run_evaluation(data, options.steps, callbacks);
}

Logs Trainer::evaluate(const Tree& x, const Tree& y, const EvaluateOptions& options) {
  return evaluate(arrays_dataset(x, y, options.batch_size, std::nullopt, model_.name()), options);
}

Tree Trainer::predict(const data::Dataset& data, const PredictOptions& options) {
  CallbackList callbacks =
      make_callbacks(options.callbacks, &model_, {1, steps_of(data, options.steps), options.verbose}, nullptr);
  callbacks.each([&](Callback& c) { c.on_predict_begin(Logs{}); });
  std::vector<std::vector<Tensor>> pieces;
  Tree structure;
  auto iterator = data.iterator(0);
  for (int64_t step = 0; options.steps < 0 || step < options.steps; ++step) {
    std::optional<Tree> batch = iterator.next();
    if (!batch) break;
    callbacks.each([&](Callback& c) { c.on_predict_batch_begin(step, Logs{}); });
    Tree out = step_functions().predict(*batch);
    std::vector<Tensor> leaves = out.flatten();
    if (pieces.empty()) {
      structure = out;
      pieces.resize(leaves.size());
    }
    for (size_t i = 0; i < leaves.size() && i < pieces.size(); ++i) pieces[i].push_back(leaves[i]);
    callbacks.each([&](Callback& c) { c.on_predict_batch_end(step, Logs{}); });
  }
  callbacks.each([&](Callback& c) { c.on_predict_end(Logs{}); });
  if (pieces.empty()) throw_error<ValueError>("{}: predict got no data", model_.name());
  std::vector<Tensor> joined;
  for (auto& p : pieces) joined.push_back(p.size() == 1 ? p[0] : ops::concatenate(p, 0));
  return structure.unflatten(joined);
}

Tree Trainer::predict(const Tree& x, const PredictOptions& options) {
  return predict(arrays_dataset(x, Tree(), options.batch_size, std::nullopt, model_.name()), options);
}

StepFunctions& Trainer::step_functions() {
  if (model_.step_functions() == nullptr) model_.set_step_functions(std::make_unique<DistributedSteps>(model_));
  return *model_.step_functions();
}

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

}  // namespace chorus::models
