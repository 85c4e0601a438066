// History: the per-epoch logs of a fit (Keras's History callback, which fit returns).
// Filled by the trainer's thread; read it after fit returns.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "chorus/models/callback.h"

namespace chorus::models {

class History : public Callback {
 public:
  // history["loss"][i] is the loss of the i-th epoch this fit ran.
  std::map<std::string, std::vector<double>> history;
  std::vector<int> epoch;

  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int epoch_index, const Logs& logs) override;
  bool implements_train_batch_hooks() const override { return false; }
  // The epochs and logs so far: a resumed fit's History holds the interrupted fit's too.
  std::optional<CallbackState> get_state() const override;
  void set_state(const CallbackState& state) override;
  bool implements_test_batch_hooks() const override { return false; }
};

}  // namespace chorus::models
