#include "chorus/models/history.h"

namespace chorus::models {

// As Keras 3: fit makes a new History each time, so only the epoch list restarts here;
// the recorded values are kept if a History is reused.
void History::on_train_begin(const Logs& /*logs*/) { epoch.clear(); }

void History::on_epoch_end(int epoch_index, const Logs& logs) {
  epoch.push_back(epoch_index);
  for (const auto& [name, value] : logs) history[name].push_back(value);
}

std::optional<CallbackState> History::get_state() const {
  return CallbackState{"History", {{"epoch", epoch}, {"history", history}}};
}

void History::set_state(const CallbackState& state) {
  epoch = state.get<std::vector<int>>("epoch");
  history = state.get<std::map<std::string, std::vector<double>>>("history");
}

}  // namespace chorus::models
