// Callback: hooks into fit/evaluate/predict (Keras's Callback). The trainer calls them
// on its own thread, in the order they were given; subclasses override what they need.
// model() is set before on_train_begin and stays valid for the whole run; during fit,
// fit() is the running fit (its state, and resuming it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/error.h"
#include "chorus/core/tensor.h"
#include "chorus/models/logs.h"

namespace chorus::models {

class FitControl;
class Model;

// What a callback carries from one epoch or batch to the next (EarlyStopping's wait and
// best), so that a fit resumed from a backup continues it exactly (BackupAndRestore).
struct CallbackState {
  std::string class_name;       // checked on restore: the state of one callback class
  nlohmann::json values;        // counters, best values, History's logs
  std::vector<Tensor> tensors;  // e.g. EarlyStopping's best weights

  // values[field] as a T; ValueError naming the class and field when it is missing or
  // of another type. A null field reads as an empty optional.
  template <class T>
  T get(const std::string& field) const {
    try {
      return values.at(field).get<T>();
    } catch (const nlohmann::json::exception& e) {
      throw_error<ValueError>("the saved state of {}: field '{}' is missing or malformed: {}", class_name, field,
                              e.what());
    }
  }
};

// What fit tells its callbacks up front (Keras's `params`).
struct CallbackParams {
  int epochs = 1;
  int64_t steps = -1;  // steps per epoch; -1 when unknown
  int verbose = 1;
};

class Callback {
 public:
  virtual ~Callback() = default;

  void set_model(Model* model) { model_ = model; }
  void set_params(const CallbackParams& params) { params_ = params; }
  // REQUIRES: set_model was called (the trainer does it before any hook).
  Model& model() const { return *model_; }
  bool has_model() const { return model_ != nullptr; }
  const CallbackParams& params() const { return params_; }
  // The fit running this callback's hooks, from on_train_begin to on_train_end of a
  // Model::fit it was given to: where that fit stands (fit_state) and how to continue an
  // earlier one (resume_fit), as BackupAndRestore does. Throws ValueError outside a fit.
  FitControl& fit() const;
  // The trainer sets it for the fit's duration (nullptr: none).
  void set_fit(FitControl* fit) { fit_ = fit; }
  FitControl* running_fit() const { return fit_; }

  virtual void on_train_begin(const Logs& /*logs*/) {}
  virtual void on_train_end(const Logs& /*logs*/) {}
  // Epochs count from 0, as in Keras.
  virtual void on_epoch_begin(int /*epoch*/, const Logs& /*logs*/) {}
  // `logs` holds the epoch's training metrics and, on validation epochs, the val_ ones.
  virtual void on_epoch_end(int /*epoch*/, const Logs& /*logs*/) {}
  virtual void on_train_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {}
  // `logs` holds the running (epoch-average) metrics after this batch.
  virtual void on_train_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_test_begin(const Logs& /*logs*/) {}
  virtual void on_test_end(const Logs& /*logs*/) {}
  virtual void on_test_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_test_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_predict_begin(const Logs& /*logs*/) {}
  virtual void on_predict_end(const Logs& /*logs*/) {}
  virtual void on_predict_batch_begin(int64_t /*batch*/, const Logs& /*logs*/) {}
  virtual void on_predict_batch_end(int64_t /*batch*/, const Logs& /*logs*/) {}

  // Whether this callback does anything in the training (test) batch hooks, as Keras's
  // _implements_train_batch_hooks. When no callback of a multi-worker fit does, the
  // workers merge their metrics once an epoch instead of after every step, and the batch
  // hooks get empty logs. A callback that cannot tell says true (the default).
  virtual bool implements_train_batch_hooks() const { return true; }
  virtual bool implements_test_batch_hooks() const { return true; }

  // This callback's state across hooks, for BackupAndRestore; nullopt (the default) for
  // a callback whose hooks depend only on their arguments. set_state is called after
  // on_train_begin of a resumed fit, with what get_state returned; it throws ValueError
  // naming the field for a state it cannot have written.
  virtual std::optional<CallbackState> get_state() const { return std::nullopt; }
  virtual void set_state(const CallbackState& /*state*/) {}
  // Whether this callback records the others' state (BackupAndRestore): fit then calls
  // its hooks after every other callback's, so that what it records is each hook's
  // complete result.
  virtual bool runs_after_others() const { return false; }

 private:
  Model* model_ = nullptr;
  FitControl* fit_ = nullptr;
  CallbackParams params_;
};

}  // namespace chorus::models
