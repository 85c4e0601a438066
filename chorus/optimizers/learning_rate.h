// LearningRate: a constant or a schedule of the optimizer's step (Keras's
// LearningRateSchedule). Schedules are immutable after construction: thread-safe.
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

namespace chorus::optimizers {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The rate at optimizer step `step` (0 for the first update).
  virtual double operator()(int64_t step) const = 0;
  // {"class_name": "ExponentialDecay", "config": {...}} as Keras serialises it.
  virtual nlohmann::json get_config() const = 0;
};

class LearningRate {
 public:
  LearningRate(double value) : value_(value) {}  // NOLINT: a number is a learning rate
  template <class Schedule>
    requires std::derived_from<Schedule, LearningRateSchedule>
  LearningRate(Schedule schedule)  // NOLINT
      : schedule_(std::make_shared<Schedule>(std::move(schedule))) {}
  LearningRate(std::shared_ptr<const LearningRateSchedule> schedule) : schedule_(std::move(schedule)) {}  // NOLINT

  double at(int64_t step) const { return schedule_ ? (*schedule_)(step) : value_; }
  bool is_schedule() const { return schedule_ != nullptr; }
  const LearningRateSchedule* schedule() const { return schedule_.get(); }

 private:
  double value_ = 0.001;
  std::shared_ptr<const LearningRateSchedule> schedule_;
};

}  // namespace chorus::optimizers
