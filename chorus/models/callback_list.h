// CallbackList: calls every callback's hook in order (Keras's CallbackList): the user's
// callbacks, then History, then the progress bar. Used by the trainer on its thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "chorus/core/shared.h"
#include "chorus/models/callback.h"

namespace chorus::models {

class CallbackList {
 public:
  CallbackList(const std::vector<Shared<Callback>>& callbacks, Model* model, const CallbackParams& params);
  // Appends `callback`, before the callbacks that run after others (unless it is one).
  void add(std::shared_ptr<Callback> callback);

  // Calls `hook` on each callback: list.each([&](Callback& c) { c.on_epoch_begin(e, logs); }).
  template <class Fn>
  void each(Fn&& hook) {
    for (const auto& c : callbacks_) hook(*c);
  }
  // Whether any callback answers true: list.any(&Callback::implements_train_batch_hooks).
  bool any(bool (Callback::*query)() const) const {
    for (const auto& c : callbacks_) {
      if (((*c).*query)()) return true;
    }
    return false;
  }
  // The states of the callbacks that have one, in order (BackupAndRestore).
  std::vector<CallbackState> get_states() const;
  // Gives each callback with a state the next of `states`. Throws ValueError when the
  // callbacks with a state are not the classes of `states`, in order, naming both lists.
  void set_states(const std::vector<CallbackState>& states);

 private:
  Model* model_;
  CallbackParams params_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
};

}  // namespace chorus::models
