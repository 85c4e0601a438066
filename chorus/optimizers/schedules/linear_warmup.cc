#include "chorus/optimizers/schedules/linear_warmup.h"

#include "chorus/core/error.h"

namespace chorus::optimizers::schedules {

LinearWarmup::LinearWarmup(int64_t warmup_steps, LearningRate after, double initial_learning_rate)
    : warmup_steps_(warmup_steps), after_(std::move(after)), initial_learning_rate_(initial_learning_rate) {
  if (warmup_steps < 0) throw_error<ValueError>("LinearWarmup: expected warmup_steps >= 0, got {}", warmup_steps);
}

double LinearWarmup::operator()(int64_t step) const {
  if (step >= warmup_steps_) return after_.at(step - warmup_steps_);
  const double fraction = static_cast<double>(step) / static_cast<double>(warmup_steps_);
  return (after_.at(0) - initial_learning_rate_) * fraction + initial_learning_rate_;
}

nlohmann::json LinearWarmup::get_config() const {
  const nlohmann::json after = after_.is_schedule() ? after_.schedule()->get_config() : nlohmann::json(after_.at(0));
  return {{"class_name", "LinearWarmup"},
          {"config",
           {{"warmup_steps", warmup_steps_},
            {"initial_learning_rate", initial_learning_rate_},
            {"after", after},
            {"name", "LinearWarmup"}}}};
}

}  // namespace chorus::optimizers::schedules
