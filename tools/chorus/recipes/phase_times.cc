#include "tools/chorus/recipes/phase_times.h"

namespace chorus::recipes {
namespace {

class ValidationTimer : public models::Callback {
 public:
  explicit ValidationTimer(PhaseTimes& times) : times_(times) {}
  void on_test_begin(const models::Logs& /*logs*/) override { start_ = std::chrono::steady_clock::now(); }
  void on_test_end(const models::Logs& /*logs*/) override {
    times_.validation_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  PhaseTimes& times_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

Shared<models::Callback> PhaseTimes::validation_timer() { return std::make_shared<ValidationTimer>(*this); }

nlohmann::json PhaseTimes::to_json() const {
  return {{"data_s", data_s},
          {"fit_s", fit_s},
          {"validation_s", validation_s},
          {"evaluate_s", evaluate_s},
          {"predict_s", predict_s}};
}

}  // namespace chorus::recipes
