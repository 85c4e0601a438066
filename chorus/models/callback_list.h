// CallbackList: calls every callback's hook in order (Keras's CallbackList): the user's
// callbacks, then History, then the progress bar. Used by the trainer on its thread.
#pragma once

#include <memory>
#include <vector>

#include "chorus/core/shared.h"
#include "chorus/models/callback.h"

namespace chorus::models {

class CallbackList {
 public:
  CallbackList(const std::vector<Shared<Callback>>& callbacks, Model* model, const CallbackParams& params);
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

 private:
  Model* model_;
  CallbackParams params_;
  std::vector<std::shared_ptr<Callback>> callbacks_;
};

}  // namespace chorus::models
