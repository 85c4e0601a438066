// Model's default steps (Keras's train_step, test_step and predict_step) and what they
// call: forward_step, compute_loss and update_metrics. The loop that runs them is Trainer.
#include <algorithm>
#include <atomic>
#include <iostream>
#include <mutex>

#include "chorus/autograd/tape.h"
#include "chorus/core/error.h"
#include "chorus/core/sharding.h"
#include "chorus/jit/tracer.h"
#include "chorus/models/jit_steps.h"
#include "chorus/models/model.h"
#include "chorus/ops/ops.h"
#include "chorus/ops/sharded_ops.h"
#include "chorus/step/replica_context.h"

namespace chorus::models {
namespace {

// A model's outputs as whole tensors: under model parallelism the last layers may leave
// them sharded, and losses, metrics and predict read them whole.
Tree whole_outputs(Tree outputs) {
  if (MeshContext::current() == nullptr) return outputs;
  return outputs.map([](const Tensor& t) { return ops::sharded::replicate(t); });
}

struct Unpacked {
  Tree x, y;
  Tensor sample_weight;
};

// Keras's unpack_x_y_sample_weight: a list of 2 or 3 is (x, y[, sample_weight]);
// anything else is x alone.
Unpacked unpack(const Tree& batch) {
  if (batch.is_list() && (batch.size() == 2 || batch.size() == 3)) {
    Unpacked u{batch[0], batch[1], {}};
    if (batch.size() == 3) u.sample_weight = batch[2].tensor();
    return u;
  }
  if (batch.is_list() && batch.size() == 1) return {batch[0], {}, {}};
  return {batch, {}, {}};
}

}  // namespace

Tensor Model::compute_loss(const Tree& /*x*/, const Tree& y, const Tree& y_pred, const Tensor& sample_weight) {
  if (!loss_) {
    throw_error<ValueError>("{}: no loss to compute: pass one to compile() or override compute_loss()", name());
  }
  if (y.empty()) throw_error<ValueError>("{}: the data has no targets (y) for the loss {}", name(), loss_->name());
  std::vector<Tensor> targets = y.flatten(), predictions = y_pred.flatten();
  if (targets.size() != predictions.size()) {
    throw_error<ValueError>("{}: the targets {} do not match the model's outputs {}", name(), y.to_string(),
                            y_pred.to_string());
  }
  Tensor total;
  for (size_t i = 0; i < targets.size(); ++i) {
    Tensor loss = (*loss_)(targets[i], predictions[i], sample_weight);
    total = total.defined() ? ops::add(total, loss) : loss;
  }
  return total;
}

void Model::update_metrics(const Tensor& loss, const Tree& y, const Tree& y_pred, const Tensor& sample_weight,
                           int64_t rows) {
  const std::vector<metrics::Metric*> all = metrics();  // this replica's copies inside a replica
  int64_t batch = rows >= 0 ? rows : y_pred.flatten().empty() ? 0 : y_pred.flatten()[0].dim(0);
  static_cast<metrics::Mean*>(all[0])->update_state(static_cast<double>(loss.item<float>()), static_cast<double>(batch));
  if (all.size() == 1) return;
  std::vector<Tensor> targets = y.flatten(), predictions = y_pred.flatten();
  for (size_t i = 0; i < targets.size() && i < predictions.size(); ++i) {
    for (size_t k = 1; k < all.size(); ++k) all[k]->update_state(targets[i], predictions[i], sample_weight);
  }
}

static Tensor scalar_loss(const Tensor& loss) { return loss.rank() == 0 ? loss : ops::mean(loss); }

Model::StepResult Model::forward_step(const Tree& x, const Tree& y, const Tensor& sample_weight, bool training) {
  StepResult out{.y = y, .y_pred = whole_outputs((*this)(x, training)), .sample_weight = sample_weight};
  out.loss = compute_loss(x, y, out.y_pred, sample_weight);
  return out;
}

JitSteps* Model::jit_steps() {
  if (!compile_options_.jit_compile) return nullptr;
  if (MeshContext::current() != nullptr) {
    static std::atomic<bool> warned{false};  // once a process: the mesh's devices ask at once
    if (!warned.exchange(true)) {
      std::cerr << fmt::format("chorus: warning: {}: jit_compile: steps on a device mesh (ModelParallel, a sharding "
                               "DataParallel) run eagerly for now\n",
                               name());
    }
    return nullptr;
  }
  const step::ReplicaContext* replica = step::ReplicaContext::current();
  const auto r = static_cast<size_t>(replica != nullptr ? replica->replica_id() : 0);
  // Replica threads ask at once; after their first step each finds its own.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  if (jit_owner_ != this) {
    jit_.clear();
    jit_owner_ = this;
  }
  if (jit_.size() <= r) jit_.resize(r + 1);
  if (jit_[r] == nullptr) jit_[r] = make_jit_steps(r == 0 ? name() : fmt::format("{}_replica_{}", name(), r));
  return jit_[r].get();
}

std::unique_ptr<JitSteps> Model::make_jit_steps(const std::string& name) {
  auto steps = std::make_unique<JitSteps>();
  JitSteps& jit = *steps;
  auto batch_of = [&jit](std::span<const Tensor> leaves) {
    return unpack(jit.batch->unflatten({leaves.begin(), leaves.end()}));
  };
  jit.train.function = std::make_unique<jit::Function>(name + "_train_step", [this, &jit, batch_of](auto leaves) {
    auto [x, y, sample_weight] = batch_of(leaves);
    std::vector<Tensor> grads;
    StepResult step;
    Tensor loss;
    {
      autograd::GradientTape tape;
      step = forward_step(x, y, sample_weight, /*training=*/true);
      loss = scalar_loss(step.loss);
      jit.variables = trainable_weights();
      const std::vector<Tensor> sources(jit.variables.begin(), jit.variables.end());
      // In a replica the reduction's host code streams as nodes of the graph (replicas/).
      auto* replica = step::ReplicaContext::current();
      grads = replica != nullptr && !sources.empty()
                  ? tape.gradient(loss, sources, replica->stream_gradients(jit.variables))
                  : tape.gradient(loss, sources);
    }
    apply_gradients_node(jit, grads);
    update_metrics_node(jit.train, loss, step);
    return std::vector<Tensor>{loss};
  });
  jit.test.function = std::make_unique<jit::Function>(name + "_test_step", [this, &jit, batch_of](auto leaves) {
    auto [x, y, sample_weight] = batch_of(leaves);
    autograd::NoGradGuard no_grad;
    const StepResult step = forward_step(x, y, sample_weight, /*training=*/false);
    const Tensor loss = scalar_loss(step.loss);
    update_metrics_node(jit.test, loss, step);
    return std::vector<Tensor>{loss};
  });
  jit.predict.function = std::make_unique<jit::Function>(name + "_predict_step", [this, &jit, batch_of](auto leaves) {
    autograd::NoGradGuard no_grad;
    jit.predict.y_pred = whole_outputs((*this)(batch_of(leaves).x, /*training=*/false));
    return jit.predict.y_pred.flatten();
  });
  return steps;
}

// The optimizer's update as one host node of the compiled step: it reads the learning
// rate and iteration count when it runs, as the eager step does.
void Model::apply_gradients_node(JitSteps& jit, const std::vector<Tensor>& grads) {
  if (jit.variables.empty()) return;
  jit.with_gradient.clear();
  std::vector<Tensor> defined, values;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) continue;
    jit.with_gradient.push_back(i);
    defined.push_back(grads[i]);
    values.push_back(jit.variables[i].value());
  }
  jit::launch_host("apply_gradients", defined, values, [this, &jit](auto in, auto) {
    std::vector<Tensor> all(jit.variables.size());
    for (size_t k = 0; k < jit.with_gradient.size(); ++k) all[jit.with_gradient[k]] = in[k];
    optimizer().apply_gradients(all, jit.variables);
  });
}

// update_metrics as one host node of a compiled step, on the step's loss, targets,
// outputs and weights.
void Model::update_metrics_node(JitStep& compiled, const Tensor& loss, const StepResult& step) {
  compiled.y = step.y;
  compiled.y_pred = step.y_pred;
  compiled.has_sample_weight = step.sample_weight.defined();
  compiled.rows = step.rows;
  std::vector<Tensor> in{loss};
  for (const Tree* tree : {&step.y, &step.y_pred}) {
    for (const Tensor& t : tree->flatten()) in.push_back(t);
  }
  if (compiled.has_sample_weight) in.push_back(step.sample_weight);
  jit::launch_host("update_metrics", in, {}, [this, &compiled](auto in, auto) {
    size_t next = 1;
    auto take = [&](const Tree& structure) {
      const size_t n = structure.flatten().size();
      next += n;
      return structure.unflatten({in.begin() + static_cast<std::ptrdiff_t>(next - n),
                                  in.begin() + static_cast<std::ptrdiff_t>(next)});
    };
    const Tree y = take(compiled.y), y_pred = take(compiled.y_pred);
    update_metrics(in[0], y, y_pred, compiled.has_sample_weight ? in[next] : Tensor(), compiled.rows);
  });
}

// A whole step as one compiled call of `step`'s function on the batch's leaves.
std::vector<Tensor> Model::run_compiled(JitSteps& jit, JitStep& step, const Tree& batch) {
  const Tree prepared = compiled_step_batch(batch);
  jit.batch = &prepared;
  return (*step.function)(prepared.flatten());
}

Logs Model::train_step(const Tree& batch) {
  if (JitSteps* jit = jit_steps()) {
    run_compiled(*jit, jit->train, batch);
    return get_metrics_result();
  }
  auto [x, y, sample_weight] = unpack(batch);
  std::vector<Variable> variables;
  StepResult step;
  Tensor loss;
  std::vector<Tensor> grads;
  std::vector<autograd::IndexedSlices> sparse_grads;
  {
    autograd::GradientTape tape;
    step = forward_step(x, y, sample_weight, /*training=*/true);
    loss = scalar_loss(step.loss);
    // After the forward pass: a subclassed model's layers build on their first call.
    variables = trainable_weights();
    std::vector<Tensor> sources(variables.begin(), variables.end());
    // An embedding table's gradient stays sparse (the rows a batch read), as TensorFlow's
    // IndexedSlices do. Under data parallelism the other gradients are reduced in buckets
    // as backward produces them.
    auto* replica = step::ReplicaContext::current();
    grads = replica != nullptr && !variables.empty()
                ? tape.gradient(loss, sources, replica->stream_gradients(variables), &sparse_grads)
                : tape.gradient(loss, sources, &sparse_grads);
  }
  if (!variables.empty()) optimizer().apply_gradients(grads, variables, sparse_grads);
  update_metrics(loss, step.y, step.y_pred, step.sample_weight, step.rows);
  return get_metrics_result();
}

Logs Model::test_step(const Tree& batch) {
  if (JitSteps* jit = jit_steps()) {
    run_compiled(*jit, jit->test, batch);
    return get_metrics_result();
  }
  auto [x, y, sample_weight] = unpack(batch);
  autograd::NoGradGuard no_grad;
  const StepResult step = forward_step(x, y, sample_weight, /*training=*/false);
  update_metrics(scalar_loss(step.loss), step.y, step.y_pred, step.sample_weight, step.rows);
  return get_metrics_result();
}

void Model::build_on_first_row(const Tree& batch) {
  // A subclassed model builds its layers as it first calls them, some perhaps in
  // compute_loss: a forward step with the loss on one row builds them all.
  const int64_t rows = std::min<int64_t>(batch_rows(batch, name()), 1);
  auto [x, y, sample_weight] = unpack(batch.map([&](const Tensor& t) { return t.first_axis_slice(0, rows); }));
  autograd::NoGradGuard no_grad;
  if (compiled() && !y.empty()) {
    forward_step(x, y, sample_weight, /*training=*/false);
  } else {
    (*this)(x, /*training=*/false);
  }
}

Tree Model::predict_step(const Tree& batch) {
  if (JitSteps* jit = jit_steps()) {
    const std::vector<Tensor> outputs = run_compiled(*jit, jit->predict, batch);
    return jit->predict.y_pred.unflatten(outputs);
  }
  autograd::NoGradGuard no_grad;
  return whole_outputs((*this)(unpack(batch).x, /*training=*/false));
}

}  // namespace chorus::models
