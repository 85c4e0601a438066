// CallbackList: the callbacks of one fit/evaluate/predict call, and their states for
// BackupAndRestore.
#include "chorus/models/callback_list.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chorus/core/error.h"
#include "chorus/models/model.h"

namespace chorus::models {

FitControl& Callback::fit() const {
  if (fit_ == nullptr) {
    throw_error<ValueError>("{}: fit_state() and resume_fit() are for a callback's hooks while fit runs",
                            model_ != nullptr ? model_->name() : std::string("callback"));
  }
  return *fit_;
}

CallbackList::CallbackList(const std::vector<Shared<Callback>>& callbacks, Model* model, const CallbackParams& params)
    : model_(model), params_(params) {
  for (const auto& c : callbacks) add(c.shared_ptr());
}

void CallbackList::add(std::shared_ptr<Callback> callback) {
  callback->set_model(model_);
  callback->set_params(params_);
  auto at = callback->runs_after_others()
                ? callbacks_.end()
                : std::find_if(callbacks_.begin(), callbacks_.end(), [](const auto& c) { return c->runs_after_others(); });
  callbacks_.insert(at, std::move(callback));
}

std::vector<CallbackState> CallbackList::get_states() const {
  std::vector<CallbackState> states;
  for (const auto& c : callbacks_) {
    if (auto state = c->get_state()) states.push_back(std::move(*state));
  }
  return states;
}

void CallbackList::set_states(const std::vector<CallbackState>& states) {
  std::vector<Callback*> stateful;
  std::vector<std::string> have, saved;
  for (const auto& c : callbacks_) {
    if (auto state = c->get_state()) {
      stateful.push_back(c.get());
      have.push_back(state->class_name);
    }
  }
  for (const CallbackState& s : states) saved.push_back(s.class_name);
  if (have != saved) {
    throw_error<ValueError>(
        "the saved callback states are of [{}], but the callbacks with a state in this fit are [{}]; pass the callbacks "
        "the interrupted fit had",
        fmt::join(saved, ", "), fmt::join(have, ", "));
  }
  for (size_t i = 0; i < states.size(); ++i) stateful[i]->set_state(states[i]);
}

}  // namespace chorus::models
