// ProgbarLogger: the callback that prints Keras's progress bar during fit, evaluate and
// predict, character for character (Keras's callbacks.ProgbarLogger over utils.Progbar).
// The trainer adds one when verbose > 0. It borrows its output stream; one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "chorus/models/callback.h"
#include "chorus/models/logs.h"

namespace chorus::models {

// Seconds on a monotonic clock. Injectable so that tests print exact times.
using ProgbarClock = std::function<double()>;
// steady_clock in seconds: the default clock.
double steady_clock_seconds();

struct ProgbarOptions {
  // Steps expected; -1 when unknown (the bar then reads "     15/Unknown").
  int64_t target = -1;
  // Characters of the bar ('━'); Keras's default.
  int width = 20;
  // 1: a bar redrawn after each update (on a terminal; elsewhere only the final line is
  // written); 2: one line when finalised; 0: nothing.
  int verbose = 1;
  // Minimum seconds between two redraws; the final update always draws.
  double interval = 0.05;
  std::string unit_name = "step";
  // Where to write; borrowed, must outlive the bar. nullptr: std::cout.
  std::ostream* out = nullptr;
  // nullptr: steady_clock_seconds.
  ProgbarClock clock;
  // True when `out` is a terminal: the line is redrawn in place ("\r") with Keras's
  // colours. False: plain text, final lines only.
  bool interactive = false;
};

// The bar itself (Keras's utils.Progbar with every metric "stateful": values are shown
// as given, since the trainer's logs are already running means). Times count from
// construction.
class Progbar {
 public:
  explicit Progbar(ProgbarOptions options);

  // Shows step `current` (1-based) with `values`. New names are appended to the ones
  // shown; known ones are replaced. `finalize` marks the last update of the bar.
  void update(int64_t current, const Logs& values, bool finalize);

  int64_t target() const { return options_.target; }
  void set_target(int64_t target) { options_.target = target; }

 private:
  // Keras's estimate: the first step is ignored once later ones are known.
  double estimate_step_duration(int64_t current, double now);
  void draw_bar_line(int64_t current, double now, double time_per_unit, bool finalize);
  void draw_summary_line(int64_t current, double now, double time_per_unit);

  ProgbarOptions options_;
  Logs values_;
  double start_;
  double last_update_ = -std::numeric_limits<double>::infinity();
  std::optional<double> time_after_first_step_;
  int64_t prev_total_width_ = 0;
};

struct ProgbarLoggerOptions {
  // Where to write; borrowed, must outlive the logger. nullptr: std::cout.
  std::ostream* out = nullptr;
  // nullptr: steady_clock_seconds.
  ProgbarClock clock;
  // Whether `out` is a terminal; unset: isatty() for std::cout, std::cerr and
  // std::clog, false for any other stream.
  std::optional<bool> interactive;
};

// Reads epochs, steps and verbose from params() when training, evaluation or prediction
// begins. In fit it shows "Epoch 1/2" (when epochs > 1) and one bar per epoch whose final
// line includes the val_ metrics; validation inside fit prints nothing of its own.
// evaluate and predict get one bar each. With unknown steps the first epoch counts
// ("     15/Unknown") and later epochs use the count it found.
class ProgbarLogger : public Callback {
 public:
  explicit ProgbarLogger(ProgbarLoggerOptions options = {});

  void on_train_begin(const Logs& logs) override;
  void on_epoch_begin(int epoch, const Logs& logs) override;
  void on_epoch_end(int epoch, const Logs& logs) override;
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_begin(const Logs& logs) override;
  void on_test_batch_end(int64_t batch, const Logs& logs) override;
  void on_test_end(const Logs& logs) override;
  void on_predict_begin(const Logs& logs) override;
  void on_predict_batch_end(int64_t batch, const Logs& logs) override;
  void on_predict_end(const Logs& logs) override;
  // Only a redrawn bar (verbose 1 on a terminal) shows the running metrics after each
  // batch (of evaluate's, not of the validation inside fit); otherwise it writes the
  // epoch's final line alone.
  bool implements_train_batch_hooks() const override { return params().verbose == 1 && interactive_; }
  bool implements_test_batch_hooks() const override {
    return params().verbose == 1 && interactive_ && !called_in_fit_;
  }

 private:
  void read_params();
  void reset_progbar();
  void maybe_init_progbar();
  void update_progbar(int64_t batch, const Logs& logs);
  void finalize_progbar(const Logs& logs);

  std::ostream* out_;
  ProgbarClock clock_;
  bool interactive_;
  std::unique_ptr<Progbar> progbar_;
  int64_t seen_ = 0;
  int64_t target_ = -1;
  int verbose_ = 1;
  int epochs_ = 1;
  bool called_in_fit_ = false;
};

}  // namespace chorus::models
