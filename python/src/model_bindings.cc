// chorus.Model and chorus.Sequential: Keras's compile/fit/evaluate/predict with its
// keyword arguments, on NumPy arrays, dicts of them or a chorus Dataset. The step loop
// runs without the GIL; Ctrl-C stops it after the current step with KeyboardInterrupt.
#include <pybind11/iostream.h>
#include <pybind11/stl.h>

#include <cmath>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "chorus/core/creation.h"
#include "chorus/data/dataset.h"
#include "chorus/models/history.h"
#include "chorus/models/model.h"
#include "chorus/models/sequential.h"
#include "python/src/bindings.h"
#include "python/src/class_weight.h"
#include "python/src/conversions.h"
#include "python/src/py_model.h"

namespace chorus::python {
namespace {

using namespace pybind11::literals;
using models::Model;

// Turns a pending SIGINT into KeyboardInterrupt at the end of a step: thrown out of the
// loop (not stop_training), so fit ends as on an error and BackupAndRestore keeps its
// backups. Reports no batch hooks, so it changes no metric merging.
class InterruptCheck : public models::Callback {
 public:
  void on_train_batch_end(int64_t, const models::Logs&) override { check(); }
  void on_test_batch_end(int64_t, const models::Logs&) override { check(); }
  void on_predict_batch_end(int64_t, const models::Logs&) override { check(); }
  bool implements_train_batch_hooks() const override { return false; }
  bool implements_test_batch_hooks() const override { return false; }

 private:
  static void check() {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
};

std::vector<Shared<models::Callback>> callbacks_of(const py::object& callbacks) {
  std::vector<Shared<models::Callback>> out{std::make_shared<InterruptCheck>()};
  if (callbacks.is_none()) return out;
  for (const py::handle c : callbacks) out.emplace_back(c.cast<std::shared_ptr<models::Callback>>());
  return out;
}

// Progress bars and warnings written to std::cout and std::cerr go to Python's sys.stdout
// and sys.stderr (a notebook shows them), taking the GIL as each line is flushed.
struct PythonStreams {
  py::scoped_ostream_redirect out{std::cout, py::module_::import("sys").attr("stdout")};
  py::scoped_estream_redirect err{std::cerr, py::module_::import("sys").attr("stderr")};
};

int verbose_of(const py::object& verbose, int auto_value) {
  if (py::isinstance<py::str>(verbose)) {
    if (verbose.cast<std::string>() != "auto") throw py::value_error("verbose: expected 'auto', 0, 1 or 2");
    return auto_value;
  }
  return verbose.cast<int>();
}

int64_t steps_of(const py::object& steps) { return steps.is_none() ? -1 : steps.cast<int64_t>(); }

bool is_dataset(const py::handle& value) { return py::isinstance<data::Dataset>(value); }

// Keras's generator input: an iterator (a generator object) of batches. A plain generator
// is used up by its first pass, as in Keras: give an endless one with steps_per_epoch.
bool is_iterator(const py::handle& value) { return py::hasattr(value, "__next__") && !is_dataset(value); }

// x as the Dataset fit, evaluate and predict read: a Dataset, or batches from an iterator.
std::optional<data::Dataset> dataset_of(const Model& model, const py::object& x) {
  if (is_dataset(x)) return prepared_for(model, x.cast<data::Dataset>());
  if (is_iterator(x)) {
    py::object iterator = x;
    return prepared_for(model, generator_dataset(py::cpp_function([iterator] { return iterator; })));
  }
  return std::nullopt;
}

// fit's validation_data: a Dataset, or (x, y) arrays batched like the training arrays.
std::optional<data::Dataset> validation_of(const Model& model, const py::object& value, int64_t batch_size) {
  if (value.is_none()) return std::nullopt;
  if (std::optional<data::Dataset> dataset = dataset_of(model, value)) return dataset;
  auto pair = value.cast<py::sequence>();
  if (py::len(pair) != 2) {
    throw py::value_error("validation_data: expected a Dataset or an (x, y) tuple; sample weights are not supported yet");
  }
  return data::Dataset::from_tensor_slices(Tree::list({to_tree(pair[0]), to_tree(pair[1])})).batch(batch_size);
}

// Arrays with sample weights as Datasets of (x, y, sample_weight) batches, since
// Model::fit(x, y) takes none.
data::Dataset weighted_batches(const Tree& x, const Tree& y, const Tensor& w, int64_t begin, int64_t end,
                               int64_t batch_size, bool shuffle) {
  auto rows = [&](const Tree& t) { return t.map([&](const Tensor& a) { return a.first_axis_slice(begin, end); }); };
  data::Dataset rows_of = data::Dataset::from_tensor_slices(Tree::list({rows(x), rows(y), rows(Tree(w))}));
  if (shuffle) rows_of = rows_of.shuffle(end - begin);  // anew each epoch, as fit shuffles arrays
  return rows_of.batch(batch_size);
}

// fit(x, y, class_weight=...) on arrays: the sample weights of every row.
Tensor class_weight_samples(const Tree& y, const py::object& sample_weight, const ClassWeights& weights) {
  if (!sample_weight.is_none()) {
    throw py::value_error("fit: you cannot use `class_weight` and `sample_weight` at the same time");
  }
  if (!y.is_tensor()) throw py::value_error("fit: `class_weight` is only supported for Models with a single output");
  return sample_weights_of(y.tensor(), weights);
}

void not_supported(const py::object& value, const char* what) {
  if (!value.is_none()) {
    throw_not_implemented(std::string(what) + " is not supported by chorus yet");
  }
}

void compile(Model& model, const py::object& optimizer, const py::object& loss, const py::object& metrics,
             const py::object& jit_compile, const py::object& loss_weights, const py::object& weighted_metrics) {
  not_supported(loss_weights, "compile(loss_weights=...)");
  // chorus's compiled metrics take a batch's sample weights when it has them: Keras's
  // weighted_metrics. Keras's metrics= ignore them, so the two cannot both be honoured.
  if (!metrics.is_none() && !weighted_metrics.is_none()) {
    throw_not_implemented("compile: chorus weighs every metric by the sample weights, so pass metrics or "
                          "weighted_metrics, not both");
  }
  models::CompileOptions options;
  if (py::isinstance<py::str>(optimizer)) options.optimizer = optimizer.cast<std::string>();
  else options.optimizer = optimizer.cast<std::shared_ptr<optimizers::Optimizer>>();
  if (py::isinstance<py::str>(loss)) options.loss = loss.cast<std::string>();
  else if (!loss.is_none()) options.loss = loss.cast<std::shared_ptr<losses::Loss>>();
  if (const py::object& given = metrics.is_none() ? weighted_metrics : metrics; !given.is_none()) {
    for (const py::handle m : given) {
      if (py::isinstance<py::str>(m)) options.metrics.emplace_back(m.cast<std::string>());
      else options.metrics.emplace_back(m.cast<std::shared_ptr<metrics::Metric>>());
    }
  }
  // Keras's "auto" turns XLA on where it is supported; chorus's compiled step is opt-in.
  options.jit_compile = py::isinstance<py::bool_>(jit_compile) && jit_compile.cast<bool>();
  model.compile(std::move(options));
}

py::object fit(Model& model, const py::object& x, const py::object& y, const py::object& batch_size, int epochs,
               const py::object& verbose, const py::object& callbacks, double validation_split,
               const py::object& validation_data, bool shuffle, int initial_epoch, const py::object& steps_per_epoch,
               const py::object& validation_steps, const py::object& validation_batch_size, int validation_freq,
               const py::object& sample_weight, const py::object& class_weight) {
  models::FitOptions options;
  options.epochs = epochs;
  options.batch_size = batch_size.is_none() ? 32 : batch_size.cast<int64_t>();
  options.verbose = verbose_of(verbose, 1);
  options.callbacks = callbacks_of(callbacks);
  options.validation_split = validation_split;
  options.validation_data = validation_of(
      model, validation_data, validation_batch_size.is_none() ? options.batch_size : validation_batch_size.cast<int64_t>());
  options.shuffle = shuffle;
  options.initial_epoch = initial_epoch;
  options.steps_per_epoch = steps_of(steps_per_epoch);
  options.validation_steps = steps_of(validation_steps);
  options.validation_freq = validation_freq;
  models::History history;
  PythonStreams streams;
  std::optional<ClassWeights> class_weights;
  if (!class_weight.is_none()) class_weights = class_weights_of(class_weight.cast<py::dict>());
  if (std::optional<data::Dataset> dataset = dataset_of(model, x)) {
    if (!y.is_none()) throw py::value_error("fit: y must be None when x is a Dataset or a generator (it yields (x, y))");
    if (!sample_weight.is_none()) throw py::value_error("fit: sample_weight goes with arrays; a Dataset yields its own");
    if (class_weights) dataset = with_class_weights(*dataset, *class_weights);
    py::gil_scoped_release release;
    history = model.fit(*dataset, std::move(options));
  } else if (!sample_weight.is_none() || class_weights) {
    // Keras's split: the last validation_split of the rows, before shuffling, sample
    // weights too; class weights weigh the training rows only.
    Tree tx = to_tree(x), ty = to_tree(y);
    Tensor w = class_weights ? class_weight_samples(ty, sample_weight, *class_weights) : to_tensor(sample_weight);
    const int64_t rows = w.rank() > 0 ? w.dim(0) : 0;
    const auto split = static_cast<int64_t>(std::ceil(static_cast<double>(rows) * (1.0 - validation_split)));
    data::Dataset train = weighted_batches(tx, ty, w, 0, split, options.batch_size, shuffle);
    if (split < rows && !options.validation_data) {
      const Tensor validation_w = class_weights ? ones(w.shape()) : w;
      options.validation_data = weighted_batches(tx, ty, validation_w, split, rows, options.batch_size, false);
    }
    options.validation_split = 0;
    py::gil_scoped_release release;
    history = model.fit(train, std::move(options));
  } else {
    Tree tx = to_tree(x), ty = to_tree(y);
    py::gil_scoped_release release;
    history = model.fit(tx, ty, std::move(options));
  }
  // Keras keeps the last fit's History as model.history.
  py::object result = py::cast(std::move(history));
  py::cast(&model, py::return_value_policy::reference).attr("history") = result;
  return result;
}

py::object evaluate(Model& model, const py::object& x, const py::object& y, const py::object& batch_size,
                    const py::object& verbose, const py::object& sample_weight, const py::object& steps,
                    const py::object& callbacks, bool return_dict) {
  models::EvaluateOptions options;
  options.batch_size = batch_size.is_none() ? 32 : batch_size.cast<int64_t>();
  options.verbose = verbose_of(verbose, 1);
  options.steps = steps_of(steps);
  options.callbacks = callbacks_of(callbacks);
  models::Logs logs;
  PythonStreams streams;
  if (std::optional<data::Dataset> dataset = dataset_of(model, x)) {
    py::gil_scoped_release release;
    logs = model.evaluate(*dataset, std::move(options));
  } else if (!sample_weight.is_none()) {
    Tensor w = to_tensor(sample_weight);
    data::Dataset batches = weighted_batches(to_tree(x), to_tree(y), w, 0, w.rank() > 0 ? w.dim(0) : 0,
                                             options.batch_size, false);
    py::gil_scoped_release release;
    logs = model.evaluate(batches, std::move(options));
  } else {
    Tree tx = to_tree(x), ty = to_tree(y);
    py::gil_scoped_release release;
    logs = model.evaluate(tx, ty, std::move(options));
  }
  py::dict by_name;
  py::list values;
  for (const auto& [name, value] : logs) {
    by_name[py::str(name)] = value;
    values.append(value);
  }
  if (return_dict) return by_name;
  if (py::len(values) == 1) return values[0];
  return values;
}

py::object predict(Model& model, const py::object& x, const py::object& batch_size, const py::object& verbose,
                   const py::object& steps, const py::object& callbacks) {
  models::PredictOptions options;
  options.batch_size = batch_size.is_none() ? 32 : batch_size.cast<int64_t>();
  options.verbose = verbose_of(verbose, 0);
  options.steps = steps_of(steps);
  options.callbacks = callbacks_of(callbacks);
  Tree out;
  PythonStreams streams;
  if (std::optional<data::Dataset> dataset = dataset_of(model, x)) {
    py::gil_scoped_release release;
    out = model.predict(*dataset, std::move(options));
  } else {
    Tree tx = to_tree(x);
    py::gil_scoped_release release;
    out = model.predict(tx, std::move(options));
  }
  return from_tree(out, /*numpy=*/true);
}

// One of Keras's own steps on a Python batch, without the GIL.
template <class Step>
py::dict keras_step(const py::object& data, Step step) {
  const Tree batch = to_tree(data);
  models::Logs logs;
  {
    py::gil_scoped_release release;
    logs = step(batch);
  }
  return logs_dict(logs);
}

void bind_model_class(py::module_& m) {
  py::class_<Model, layers::Layer, PyModel<Model>, std::shared_ptr<Model>>(m, "Model", py::dynamic_attr())
      .def(py::init_alias<std::string>(), "name"_a = "")
      .def(py::init([](const py::object& inputs, const py::object& outputs, const std::string& name) {
             return std::make_shared<PyModel<Model>>(to_tree(inputs), to_tree(outputs), name);
           }),
           "inputs"_a, "outputs"_a, "name"_a = "")
      .def("compile", &compile, "optimizer"_a = "rmsprop", "loss"_a = py::none(), "metrics"_a = py::none(),
           "jit_compile"_a = "auto", "loss_weights"_a = py::none(), "weighted_metrics"_a = py::none())
      .def("fit", &fit, "x"_a = py::none(), "y"_a = py::none(), "batch_size"_a = py::none(), "epochs"_a = 1,
           "verbose"_a = "auto", "callbacks"_a = py::none(), "validation_split"_a = 0.0,
           "validation_data"_a = py::none(), "shuffle"_a = true, "initial_epoch"_a = 0,
           "steps_per_epoch"_a = py::none(), "validation_steps"_a = py::none(),
           "validation_batch_size"_a = py::none(), "validation_freq"_a = 1, "sample_weight"_a = py::none(),
           "class_weight"_a = py::none())
      .def("evaluate", &evaluate, "x"_a = py::none(), "y"_a = py::none(), "batch_size"_a = py::none(),
           "verbose"_a = "auto", "sample_weight"_a = py::none(), "steps"_a = py::none(), "callbacks"_a = py::none(),
           "return_dict"_a = false)
      .def("predict", &predict, "x"_a, "batch_size"_a = py::none(), "verbose"_a = "auto", "steps"_a = py::none(),
           "callbacks"_a = py::none())
      .def("compute_loss", [](Model& model, const py::object& x, const py::object& y, const py::object& y_pred,
                              const py::object& sample_weight, bool) {
        Tensor weight = sample_weight.is_none() ? Tensor() : to_tensor(sample_weight);
        Tree tx = to_tree(x), ty = to_tree(y), tp = to_tree(y_pred);
        py::gil_scoped_release release;
        return model.Model::compute_loss(tx, ty, tp, weight);  // Keras's default, not an override
      }, "x"_a = py::none(), "y"_a = py::none(), "y_pred"_a = py::none(), "sample_weight"_a = py::none(),
         "training"_a = true)
      // Keras's own steps, which an override may call as super().train_step(data).
      .def("train_step", [](Model& model, const py::object& data) {
        return keras_step(data, [&](const Tree& batch) { return model.Model::train_step(batch); });
      }, "data"_a)
      .def("test_step", [](Model& model, const py::object& data) {
        return keras_step(data, [&](const Tree& batch) { return model.Model::test_step(batch); });
      }, "data"_a)
      // The loss tracker ("loss") and the compiled metrics; inside a replica's step, that
      // replica's copies, as a custom train_step updates them.
      .def_property_readonly("metrics", [](const Model& model) {
        py::list out;
        for (metrics::Metric* metric : model.metrics()) out.append(py::cast(metric, py::return_value_policy::reference));
        return out;
      })
      .def_property("stop_training", [](const Model& model) { return model.stop_training; },
                    [](Model& model, bool stop) { model.stop_training = stop; })
      .def_property("jit_compile", &Model::jit_compile, &Model::set_jit_compile)
      .def_property_readonly("optimizer", [](const Model& model) -> py::object {
        if (!model.compiled()) return py::none();
        return py::cast(&model.optimizer(), py::return_value_policy::reference);
      })
      .def("summary", [](const Model& model, const py::object& print_fn) {
        std::ostringstream out;
        model.summary(out);
        std::string text = out.str();
        while (!text.empty() && text.back() == '\n') text.pop_back();
        (print_fn.is_none() ? py::module_::import("builtins").attr("print") : print_fn)(text);
      }, "print_fn"_a = py::none())
      .def("save", [](const Model& model, const std::string& path) {
        py::gil_scoped_release release;
        model.save(path);
      }, "filepath"_a)
      .def("save_weights", [](const Model& model, const std::string& path) {
        py::gil_scoped_release release;
        model.save_weights(path);
      }, "filepath"_a)
      .def("load_weights", [](Model& model, const std::string& path) {
        py::gil_scoped_release release;
        model.load_weights(path);
      }, "filepath"_a);

  py::class_<models::Sequential, Model, PyModel<models::Sequential>, std::shared_ptr<models::Sequential>>(
      m, "Sequential", py::dynamic_attr())
      .def(py::init([](const std::vector<std::shared_ptr<layers::Layer>>& layers, const std::string& name) {
             std::vector<Shared<layers::Layer>> shared(layers.begin(), layers.end());
             return std::make_shared<PyModel<models::Sequential>>(std::move(shared), name);
           }),
           "layers"_a = std::vector<std::shared_ptr<layers::Layer>>{}, "name"_a = "")
      .def("add", [](models::Sequential& model, std::shared_ptr<layers::Layer> layer) { model.add(std::move(layer)); },
           "layer"_a);

  py::class_<models::History>(m, "History")
      .def_readonly("history", &models::History::history)
      .def_readonly("epoch", &models::History::epoch);

  m.def("load_model", [](const std::string& path, bool compile) {
    std::unique_ptr<Model> model;
    {
      py::gil_scoped_release release;
      model = models::load_model(path, {.compile = compile});
    }
    return std::shared_ptr<Model>(std::move(model));
  }, "filepath"_a, "compile"_a = true);
}

}  // namespace

void bind_models(py::module_& m) { bind_model_class(m); }

}  // namespace chorus::python
