#include "chorus/optimizers/schedules/piecewise_constant_decay.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "chorus/core/config_reader.h"
#include "chorus/core/error.h"

namespace chorus::optimizers::schedules {

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  if (values_.size() != boundaries_.size() + 1) {
    throw_error<ValueError>(
        "PiecewiseConstantDecay: expected one more value than boundaries, got {} boundaries [{}] and {} values [{}]",
        boundaries_.size(), fmt::join(boundaries_, ", "), values_.size(), fmt::join(values_, ", "));
  }
  if (std::adjacent_find(boundaries_.begin(), boundaries_.end(), std::greater_equal<>()) != boundaries_.end()) {
    throw_error<ValueError>("PiecewiseConstantDecay: expected strictly increasing boundaries, got [{}]",
                            fmt::join(boundaries_, ", "));
  }
}

double PiecewiseConstantDecay::operator()(int64_t step) const {
  // The first boundary >= step closes the interval the step is in.
  const auto it = std::lower_bound(boundaries_.begin(), boundaries_.end(), step);
  return values_[static_cast<size_t>(it - boundaries_.begin())];
}

nlohmann::json PiecewiseConstantDecay::get_config() const {
  return {{"class_name", "PiecewiseConstantDecay"},
          {"config", {{"boundaries", boundaries_}, {"values", values_}, {"name", "PiecewiseConstant"}}}};
}

PiecewiseConstantDecay PiecewiseConstantDecay::from_config(const nlohmann::json& config) {
  ConfigReader reader("PiecewiseConstantDecay", config);
  reader.string("name", "");
  reader.require({"boundaries", "values"});
  PiecewiseConstantDecay schedule(reader.value<std::vector<int64_t>>("boundaries", {}),
                                  reader.value<std::vector<double>>("values", {}));
  reader.finish();
  return schedule;
}

}  // namespace chorus::optimizers::schedules
