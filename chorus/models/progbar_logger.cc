// The text follows keras/src/utils/progbar.py exactly; the formatting of numbers uses
// printf, whose rounding (correct, ties to even) is Python's.
//
// verbose=1 on a terminal, each redraw (bold count, green done part, white rest):
//   "\b"*previous_width "\r" "\x1b[1m" " 3/10" "\x1b[0m " "\x1b[32m━━━━━━\x1b[0m"
//   "\x1b[37m━━━━━━━━━━━━━━\x1b[0m" " \x1b[1m" "2s" "\x1b[0m" " 7ms/step" " - loss: 0.3000"
//   then spaces to cover a longer previous line, and "\n" after the final one.
// verbose=1 elsewhere, the final line only, plain:  "10/10 ━━━━━━━━━━━━━━━━━━━━ 5s 7ms/step - loss: 0.3000"
// verbose=2, when finalised:                          "10/10 - 5s - 7ms/step - loss: 0.3000"
#include "chorus/models/progbar_logger.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <iostream>

#include <unistd.h>

namespace chorus::models {
namespace {

constexpr const char* kBold = "\x1b[1m";
constexpr const char* kGreen = "\x1b[32m";
constexpr const char* kWhite = "\x1b[37m";
constexpr const char* kReset = "\x1b[0m";
constexpr const char* kBarChar = "\u2501";  // '━'

// printf into a std::string (Python's %-formatting and f"{x:.0f}" round the same way).
[[gnu::format(printf, 1, 2)]] std::string printf_string(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string result(static_cast<size_t>(std::max(n, 0)) + 1, '\0');
  std::vsnprintf(result.data(), result.size(), format, again);
  va_end(again);
  result.pop_back();  // the terminating NUL
  return result;
}

std::string repeat(const char* piece, int64_t times) {
  std::string result;
  for (int64_t i = 0; i < times; ++i) result += piece;
  return result;
}

int64_t num_digits(int64_t value) {
  int64_t digits = 1;
  for (; value >= 10; value /= 10) ++digits;
  return digits;
}

// Characters a terminal shows: UTF-8 code points outside "\x1b[...m" sequences.
int64_t visible_width(const std::string& text) {
  int64_t width = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\x1b') {
      while (i < text.size() && text[i] != 'm') ++i;
      continue;
    }
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++width;
  }
  return width;
}

// Keras's _format_time: " 7ms/step".
std::string format_time(double time_per_unit, const std::string& unit_name) {
  if (time_per_unit >= 1 || time_per_unit == 0) return printf_string(" %.0fs/", time_per_unit) + unit_name;
  if (time_per_unit >= 1e-3) return printf_string(" %.0fms/", time_per_unit * 1000.0) + unit_name;
  return printf_string(" %.0fus/", time_per_unit * 1000000.0) + unit_name;
}

// Python's "%d" of a float truncates toward zero.
int64_t trunc_int(double value) { return static_cast<int64_t>(value); }

std::string format_eta(double eta) {
  if (eta > 3600) {
    return printf_string("%lld:%02lld:%02lld", static_cast<long long>(trunc_int(std::floor(eta / 3600))),
                         static_cast<long long>(trunc_int(std::floor(std::fmod(eta, 3600) / 60))),
                         static_cast<long long>(trunc_int(std::fmod(eta, 60))));
  }
  if (eta > 60) {
    return printf_string("%lld:%02lld", static_cast<long long>(trunc_int(std::floor(eta / 60))),
                         static_cast<long long>(trunc_int(std::fmod(eta, 60))));
  }
  return printf_string("%llds", static_cast<long long>(trunc_int(eta)));
}

// " - loss: 0.3000 - accuracy: 0.9000". Keras tests |v| > 1e-3 on the bar line but
// v > 1e-3 on the verbose=2 line (so negative values print as %.4e there).
std::string format_values(const Logs& values, bool absolute_threshold) {
  std::string text;
  for (const auto& [name, value] : values) {
    const double shown = absolute_threshold ? std::abs(value) : value;
    // printf may print a NaN with its sign bit as "-nan"; Python always prints "nan".
    const std::string number = std::isnan(value) ? " nan"
                               : shown > 1e-3    ? printf_string(" %.4f", value)
                                                 : printf_string(" %.4e", value);
    text += " - " + name + ":" + number;
  }
  return text;
}

bool stream_is_terminal(const std::ostream* out) {
  if (out == &std::cout) return ::isatty(STDOUT_FILENO) != 0;
  if (out == &std::cerr || out == &std::clog) return ::isatty(STDERR_FILENO) != 0;
  return false;
}

}  // namespace

double steady_clock_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Progbar::Progbar(ProgbarOptions options) : options_(std::move(options)) {
  if (options_.out == nullptr) options_.out = &std::cout;
  if (!options_.clock) options_.clock = steady_clock_seconds;
  start_ = options_.clock();
}

void Progbar::update(int64_t current, const Logs& values, bool finalize) {
  for (const auto& [name, value] : values) values_.set(name, value);
  const double now = options_.clock();
  const double time_per_unit = estimate_step_duration(current, now);
  if (options_.verbose == 1) {
    if (now - last_update_ < options_.interval && !finalize) return;
    // Off a terminal a redrawn line would pile up, so only the final one is written.
    if (options_.interactive || finalize) draw_bar_line(current, now, time_per_unit, finalize);
  } else if (options_.verbose == 2) {
    if (finalize && options_.target > 0) draw_summary_line(current, now, time_per_unit);
  }
  last_update_ = now;
}

double Progbar::estimate_step_duration(int64_t current, double now) {
  if (current == 0) return 0;
  double time_per_unit;
  if (time_after_first_step_ && current > 1) {
    time_per_unit = (now - *time_after_first_step_) / static_cast<double>(current - 1);
  } else {
    time_per_unit = (now - start_) / static_cast<double>(current);
  }
  if (current == 1) time_after_first_step_ = now;
  return time_per_unit;
}

void Progbar::draw_bar_line(int64_t current, double now, double time_per_unit, bool finalize) {
  const bool colour = options_.interactive;
  auto styled = [&](const char* style, const std::string& text) {
    return colour ? style + text + kReset : text;
  };
  const int64_t target = options_.target;
  std::string bar;
  if (target > 0) {
    const int digits = static_cast<int>(num_digits(target));
    bar = styled(kBold, printf_string("%*lld/%lld", digits, static_cast<long long>(current),
                                      static_cast<long long>(target))) + " ";
    const auto done = static_cast<int64_t>(options_.width * (static_cast<double>(current) / static_cast<double>(target)));
    if (done > 0) bar += styled(kGreen, repeat(kBarChar, done));
    bar += styled(kWhite, repeat(kBarChar, options_.width - done));
  } else {
    bar = printf_string("%7lld/Unknown", static_cast<long long>(current));
  }
  // (Appending, not " " + text: GCC 12 gives a false -Wrestrict on the latter.)
  std::string info = " ";
  if (target > 0 && !finalize) {
    info += styled(kBold, format_eta(time_per_unit * static_cast<double>(target - current)));
  } else {
    info += styled(kBold, printf_string("%.0fs", now - start_));
  }
  info += format_time(time_per_unit, options_.unit_name);
  info += format_values(values_, /*absolute_threshold=*/true);

  std::string message;
  if (options_.interactive) message = std::string(static_cast<size_t>(prev_total_width_), '\b') + "\r";
  message += bar + info;
  const int64_t total_width = visible_width(bar) + visible_width(info);
  if (options_.interactive && prev_total_width_ > total_width) {
    message += std::string(static_cast<size_t>(prev_total_width_ - total_width), ' ');
  }
  if (finalize) message += "\n";
  *options_.out << message << std::flush;
  prev_total_width_ = total_width;
}

void Progbar::draw_summary_line(int64_t current, double now, double time_per_unit) {
  const int digits = static_cast<int>(num_digits(options_.target));
  std::string line = printf_string("%*lld/%lld", digits, static_cast<long long>(current),
                                   static_cast<long long>(options_.target));
  line += printf_string(" - %.0fs", now - start_);
  line += " -" + format_time(time_per_unit, options_.unit_name);
  line += format_values(values_, /*absolute_threshold=*/false);
  *options_.out << line << "\n" << std::flush;
}

ProgbarLogger::ProgbarLogger(ProgbarLoggerOptions options)
    : out_(options.out != nullptr ? options.out : &std::cout),
      clock_(options.clock ? std::move(options.clock) : ProgbarClock(steady_clock_seconds)),
      interactive_(options.interactive.value_or(stream_is_terminal(out_))) {}

void ProgbarLogger::read_params() {
  verbose_ = params().verbose;
  epochs_ = params().epochs;
  target_ = params().steps;
}

void ProgbarLogger::on_train_begin(const Logs& /*logs*/) {
  // Inside fit, validation (on_test_*) prints nothing of its own.
  called_in_fit_ = true;
  read_params();
}

void ProgbarLogger::on_epoch_begin(int epoch, const Logs& /*logs*/) {
  reset_progbar();
  maybe_init_progbar();
  if (verbose_ != 0 && epochs_ > 1) *out_ << "Epoch " << epoch + 1 << "/" << epochs_ << "\n" << std::flush;
}

void ProgbarLogger::on_epoch_end(int /*epoch*/, const Logs& logs) { finalize_progbar(logs); }

void ProgbarLogger::on_train_batch_end(int64_t batch, const Logs& logs) { update_progbar(batch, logs); }

void ProgbarLogger::on_test_begin(const Logs& /*logs*/) {
  if (called_in_fit_) return;
  read_params();
  reset_progbar();
  maybe_init_progbar();
}

void ProgbarLogger::on_test_batch_end(int64_t batch, const Logs& logs) {
  if (!called_in_fit_) update_progbar(batch, logs);
}

void ProgbarLogger::on_test_end(const Logs& logs) {
  if (!called_in_fit_) finalize_progbar(logs);
}

void ProgbarLogger::on_predict_begin(const Logs& /*logs*/) {
  read_params();
  reset_progbar();
  maybe_init_progbar();
}

// Prediction results are not shown.
void ProgbarLogger::on_predict_batch_end(int64_t batch, const Logs& /*logs*/) { update_progbar(batch, Logs()); }

void ProgbarLogger::on_predict_end(const Logs& logs) { finalize_progbar(logs); }

void ProgbarLogger::reset_progbar() {
  seen_ = 0;
  progbar_.reset();
}

void ProgbarLogger::maybe_init_progbar() {
  if (progbar_) return;
  progbar_ = std::make_unique<Progbar>(ProgbarOptions{
      .target = target_, .verbose = verbose_, .out = out_, .clock = clock_, .interactive = interactive_});
}

void ProgbarLogger::update_progbar(int64_t batch, const Logs& logs) {
  maybe_init_progbar();
  seen_ = batch + 1;  // one-based
  if (verbose_ == 1) progbar_->update(seen_, logs, /*finalize=*/false);
}

void ProgbarLogger::finalize_progbar(const Logs& logs) {
  maybe_init_progbar();
  // With unknown steps the first epoch's count becomes the target of later ones.
  if (target_ < 0) {
    target_ = seen_;
    progbar_->set_target(target_);
  }
  progbar_->update(target_, logs, /*finalize=*/true);
}

}  // namespace chorus::models
