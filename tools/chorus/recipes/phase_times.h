// PhaseTimes: the wall-clock seconds a recipe run spends in each phase (loading data, fit,
// the validation inside fit, evaluate, predict), for `chorus train --timings FILE`, which
// bench/run_tutorials reads to break a whole process's time down. A value filled by the
// one thread that runs the recipe.
#pragma once

#include <chrono>

#include <nlohmann/json.hpp>

#include "chorus/core/shared.h"
#include "chorus/models/callback.h"

namespace chorus::recipes {

struct PhaseTimes {
  double data_s = 0;        // reading, preprocessing and caching the datasets
  double fit_s = 0;         // Model::fit, validation included
  double validation_s = 0;  // the part of fit_s spent validating
  double evaluate_s = 0;    // Model::evaluate after fit
  double predict_s = 0;     // Model::predict after fit

  // A callback for fit that adds the time between each on_test_begin and on_test_end to
  // validation_s. REQUIRES: this outlives the fit.
  Shared<models::Callback> validation_timer();

  // {"data_s", "fit_s", "validation_s", "evaluate_s", "predict_s"}.
  nlohmann::json to_json() const;
};

// Runs fn() and adds its wall-clock seconds to *seconds when seconds is not null; returns
// what fn returns.
template <class Fn>
decltype(auto) timed(double* seconds, Fn&& fn) {
  struct Adder {
    double* seconds;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~Adder() {
      if (seconds != nullptr) {
        *seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
    }
  } adder{seconds};
  return fn();
}

}  // namespace chorus::recipes
