// What compile() and fit() take: optimizers, losses and metrics (made from Keras's
// constructor arguments through their registries), and callbacks: the built-ins with
// Keras's keyword arguments, and Callback for subclasses written in Python, whose hooks
// run with the GIL while the step loop runs without it.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chorus/callbacks/callbacks.h"
#include "chorus/core/creation.h"
#include "chorus/losses/loss.h"
#include "chorus/metrics/mean.h"
#include "chorus/metrics/metric.h"
#include "chorus/models/model.h"
#include "chorus/optimizers/optimizer.h"
#include "python/src/bindings.h"
#include "python/src/conversions.h"
#include "python/src/shared_object.h"

namespace chorus::python {
namespace {

using namespace pybind11::literals;
using models::Callback;
using models::Logs;

// Keras's save_freq: "epoch" or a number of batches.
std::optional<int64_t> save_freq_of(const py::object& save_freq) {
  if (py::isinstance<py::str>(save_freq)) {
    if (save_freq.cast<std::string>() != "epoch") {
      throw py::value_error("save_freq: expected 'epoch' or a number of batches, got '" +
                            save_freq.cast<std::string>() + "'");
    }
    return std::nullopt;
  }
  return save_freq.cast<int64_t>();
}

callbacks::Mode mode_of(const std::string& mode) {
  if (mode == "auto") return callbacks::Mode::kAuto;
  if (mode == "min") return callbacks::Mode::kMin;
  if (mode == "max") return callbacks::Mode::kMax;
  throw py::value_error("mode: expected 'auto', 'min' or 'max', got '" + mode + "'");
}

// A callback subclassed in Python: each hook it defines runs with the GIL.
class PyCallback : public Callback {
 public:
#define CHORUS_PY_HOOK(hook, ...)                                        \
  {                                                                      \
    py::gil_scoped_acquire gil;                                          \
    if (py::function fn = py::get_override(static_cast<const Callback*>(this), #hook)) fn(__VA_ARGS__); \
  }
  void on_train_begin(const Logs& logs) override CHORUS_PY_HOOK(on_train_begin, logs_dict(logs))
  void on_train_end(const Logs& logs) override CHORUS_PY_HOOK(on_train_end, logs_dict(logs))
  void on_epoch_begin(int epoch, const Logs& logs) override CHORUS_PY_HOOK(on_epoch_begin, epoch, logs_dict(logs))
  void on_epoch_end(int epoch, const Logs& logs) override CHORUS_PY_HOOK(on_epoch_end, epoch, logs_dict(logs))
  void on_train_batch_begin(int64_t batch, const Logs& logs) override
      CHORUS_PY_HOOK(on_train_batch_begin, batch, logs_dict(logs))
  void on_train_batch_end(int64_t batch, const Logs& logs) override
      CHORUS_PY_HOOK(on_train_batch_end, batch, logs_dict(logs))
  void on_test_begin(const Logs& logs) override CHORUS_PY_HOOK(on_test_begin, logs_dict(logs))
  void on_test_end(const Logs& logs) override CHORUS_PY_HOOK(on_test_end, logs_dict(logs))
  void on_test_batch_end(int64_t batch, const Logs& logs) override
      CHORUS_PY_HOOK(on_test_batch_end, batch, logs_dict(logs))
  void on_predict_begin(const Logs& logs) override CHORUS_PY_HOOK(on_predict_begin, logs_dict(logs))
  void on_predict_end(const Logs& logs) override CHORUS_PY_HOOK(on_predict_end, logs_dict(logs))
#undef CHORUS_PY_HOOK

  // Batch hooks cost a GIL round trip per batch: skipped unless the subclass defines one.
  bool implements_train_batch_hooks() const override {
    return defines("on_train_batch_begin") || defines("on_train_batch_end");
  }
  bool implements_test_batch_hooks() const override { return defines("on_test_batch_end"); }

 private:
  bool defines(const char* hook) const {
    py::gil_scoped_acquire gil;
    return static_cast<bool>(py::get_override(static_cast<const Callback*>(this), hook));
  }
};

void bind_callbacks(py::module_& m) {
  py::class_<Callback, PyCallback, std::shared_ptr<Callback>>(m, "Callback")
      .def(py::init_alias<>())
      .def_property_readonly("model", [](const Callback& c) -> py::object {
        if (!c.has_model()) return py::none();
        return py::cast(&c.model(), py::return_value_policy::reference);
      });
  py::class_<callbacks::EarlyStopping, Callback, std::shared_ptr<callbacks::EarlyStopping>>(m, "EarlyStopping")
      .def(py::init([](const std::string& monitor, double min_delta, int patience, int verbose, const std::string& mode,
                       std::optional<double> baseline, bool restore_best_weights, int start_from_epoch) {
             return std::make_shared<callbacks::EarlyStopping>(callbacks::EarlyStoppingOptions{
                 monitor, min_delta, patience, verbose, mode_of(mode), baseline, restore_best_weights,
                 start_from_epoch});
           }),
           "monitor"_a = "val_loss", "min_delta"_a = 0.0, "patience"_a = 0, "verbose"_a = 0, "mode"_a = "auto",
           "baseline"_a = py::none(), "restore_best_weights"_a = false, "start_from_epoch"_a = 0);
  py::class_<callbacks::ModelCheckpoint, Callback, std::shared_ptr<callbacks::ModelCheckpoint>>(m, "ModelCheckpoint")
      .def(py::init([](const std::string& filepath, const std::string& monitor, int verbose, bool save_best_only,
                       bool save_weights_only, const std::string& mode, const py::object& save_freq,
                       std::optional<double> initial_value_threshold) {
             return std::make_shared<callbacks::ModelCheckpoint>(
                 filepath, callbacks::ModelCheckpointOptions{monitor, verbose, save_best_only, save_weights_only,
                                                             mode_of(mode), save_freq_of(save_freq),
                                                             initial_value_threshold});
           }),
           "filepath"_a, "monitor"_a = "val_loss", "verbose"_a = 0, "save_best_only"_a = false,
           "save_weights_only"_a = false, "mode"_a = "auto", "save_freq"_a = "epoch",
           "initial_value_threshold"_a = py::none());
  py::class_<callbacks::BackupAndRestore, Callback, std::shared_ptr<callbacks::BackupAndRestore>>(m, "BackupAndRestore")
      .def(py::init([](const std::string& backup_dir, const py::object& save_freq, bool delete_checkpoint) {
             return std::make_shared<callbacks::BackupAndRestore>(
                 backup_dir, callbacks::BackupAndRestoreOptions{save_freq_of(save_freq), delete_checkpoint});
           }),
           "backup_dir"_a, "save_freq"_a = "epoch", "delete_checkpoint"_a = true);
  py::class_<callbacks::CSVLogger, Callback, std::shared_ptr<callbacks::CSVLogger>>(m, "CSVLogger")
      .def(py::init([](const std::string& filename, const std::string& separator, bool append) {
             if (separator.size() != 1) throw py::value_error("CSVLogger: separator must be one character");
             return std::make_shared<callbacks::CSVLogger>(filename, callbacks::CSVLoggerOptions{separator[0], append});
           }),
           "filename"_a, "separator"_a = ",", "append"_a = false);
  py::class_<callbacks::TensorBoard, Callback, std::shared_ptr<callbacks::TensorBoard>>(m, "TensorBoard")
      .def(py::init([](const std::string& log_dir, int histogram_freq, bool, bool write_images, bool,
                       const py::object& update_freq, const py::object& profile_batch, int embeddings_freq) {
             // Keras's write_graph defaults to True: chorus writes no graph whatever it says.
             if (histogram_freq != 0 || write_images || embeddings_freq != 0) {
               throw_not_implemented("TensorBoard: histograms, images and embeddings are not supported by chorus; "
                                     "scalars and profiles are");
             }
             callbacks::TensorBoardOptions options;
             if (!py::isinstance<py::str>(update_freq)) options.update_freq = update_freq.cast<int64_t>();
             else if (update_freq.cast<std::string>() == "batch") options.update_freq = 1;
             else if (update_freq.cast<std::string>() != "epoch") {
               throw py::value_error("TensorBoard: update_freq must be 'epoch', 'batch' or a number of batches");
             }
             if (py::isinstance<py::int_>(profile_batch)) {
               const auto batch = profile_batch.cast<int64_t>();
               options.profile_batch = {batch, batch};
             } else {
               options.profile_batch = profile_batch.cast<std::pair<int64_t, int64_t>>();
             }
             return std::make_shared<callbacks::TensorBoard>(log_dir, options);
           }),
           "log_dir"_a = "logs", "histogram_freq"_a = 0, "write_graph"_a = true, "write_images"_a = false,
           "write_steps_per_second"_a = false, "update_freq"_a = "epoch", "profile_batch"_a = 0,
           "embeddings_freq"_a = 0);
  py::class_<callbacks::TerminateOnNaN, Callback, std::shared_ptr<callbacks::TerminateOnNaN>>(m, "TerminateOnNaN")
      .def(py::init<>());
  py::class_<callbacks::LearningRateScheduler, Callback, std::shared_ptr<callbacks::LearningRateScheduler>>(
      m, "LearningRateScheduler")
      .def(py::init([](const py::function& schedule, int verbose) {
             // Called from the training thread: take the GIL for the Python function.
             auto fn = [schedule = SharedObject(schedule)](int epoch, double rate) {
               py::gil_scoped_acquire gil;
               return schedule.get()(epoch, rate).cast<double>();
             };
             return std::make_shared<callbacks::LearningRateScheduler>(fn, verbose);
           }),
           "schedule"_a, "verbose"_a = 0);
}

void bind_compile_objects(py::module_& m) {
  py::class_<optimizers::Optimizer, std::shared_ptr<optimizers::Optimizer>>(m, "Optimizer")
      .def_property_readonly("name", &optimizers::Optimizer::name)
      .def_property_readonly("iterations", &optimizers::Optimizer::iterations)
      // A tensor, as Keras's variable: optimizer.learning_rate.numpy() works.
      .def_property("learning_rate", [](const optimizers::Optimizer& o) { return scalar(o.learning_rate(), kFloat32); },
                    &optimizers::Optimizer::set_learning_rate)
      // Keras's apply_gradients(zip(grads, vars)); a None gradient leaves its variable be.
      // Inside a replica's step it reduces across the replicas first, so it waits for them
      // without the GIL.
      .def("apply_gradients", [](optimizers::Optimizer& o, const py::iterable& grads_and_vars) {
        std::vector<Tensor> grads;
        std::vector<autograd::Variable> variables;
        for (const py::handle pair : grads_and_vars) {
          const auto [grad, variable] = pair.cast<std::pair<py::object, autograd::Variable>>();
          grads.push_back(grad.is_none() ? Tensor() : to_tensor(grad));
          variables.push_back(variable);
        }
        py::gil_scoped_release release;
        o.apply_gradients(grads, variables);
      }, "grads_and_vars"_a)
      .def("get_config", [](const optimizers::Optimizer& o) { return from_json(o.get_config()); })
      .def("to_config", [](const optimizers::Optimizer& o) { return from_json(o.to_config()); });
  m.def("optimizer_from_config", [](const std::string& class_name, const py::dict& config) {
    return optimizers::Optimizer::from_config({{"class_name", class_name}, {"config", to_json(config)}});
  });
  py::class_<losses::Loss, std::shared_ptr<losses::Loss>>(m, "Loss")
      .def_property_readonly("name", &losses::Loss::name)
      .def("__call__", [](const losses::Loss& loss, const py::object& y_true, const py::object& y_pred,
                          const py::object& sample_weight) {
        Tensor t = to_tensor(y_true), p = to_tensor(y_pred);
        Tensor w = sample_weight.is_none() ? Tensor() : to_tensor(sample_weight);
        return released(numel(t, p), [&] { return loss(t, p, w); });
      }, "y_true"_a, "y_pred"_a, "sample_weight"_a = py::none())
      .def("get_config", [](const losses::Loss& l) { return from_json(l.get_config()); })
      .def("to_config", [](const losses::Loss& l) { return from_json(l.to_config()); });
  m.def("loss_from_config", [](const std::string& class_name, const py::dict& config) {
    return losses::Loss::from_config({{"class_name", class_name}, {"config", to_json(config)}});
  });
  py::class_<metrics::Metric, std::shared_ptr<metrics::Metric>>(m, "Metric")
      .def_property_readonly("name", &metrics::Metric::name)
      // Keras's two forms: a Mean (the loss tracker) takes update_state(values[,
      // sample_weight]), the others update_state(y_true, y_pred[, sample_weight]).
      .def("update_state", [](metrics::Metric& metric, const py::object& first, const py::object& second,
                              const py::object& sample_weight) {
        if (auto* mean = dynamic_cast<metrics::Mean*>(&metric)) {
          if (!second.is_none() && !sample_weight.is_none()) {
            throw py::type_error(metric.name() + ": a Mean's update_state takes (values, sample_weight=None)");
          }
          Tensor values = to_tensor(first);
          const py::object& weight = second.is_none() ? sample_weight : second;
          Tensor w = weight.is_none() ? Tensor() : to_tensor(weight);
          py::gil_scoped_release release;
          mean->update_state(values, w);
          return;
        }
        if (second.is_none()) throw py::type_error(metric.name() + ".update_state: expected (y_true, y_pred)");
        Tensor t = to_tensor(first), p = to_tensor(second);
        Tensor w = sample_weight.is_none() ? Tensor() : to_tensor(sample_weight);
        py::gil_scoped_release release;
        metric.update_state(t, p, w);
      }, "y_true"_a, "y_pred"_a = py::none(), "sample_weight"_a = py::none())
      .def("result", &metrics::Metric::result)
      .def("reset_state", &metrics::Metric::reset_state)
      .def("get_config", [](const metrics::Metric& x) { return from_json(x.get_config()); })
      .def("to_config", [](const metrics::Metric& x) { return from_json(x.to_config()); });
  m.def("metric_from_config", [](const std::string& class_name, const py::dict& config) {
    return metrics::Metric::from_config({{"class_name", class_name}, {"config", to_json(config)}});
  });
}

}  // namespace

void bind_training(py::module_& m) {
  bind_compile_objects(m);
  bind_callbacks(m);
}

}  // namespace chorus::python
