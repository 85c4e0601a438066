#include "chorus/callbacks/terminate_on_nan.h"

#include <cmath>
#include <iostream>

#include "chorus/callbacks/python_format.h"
#include "chorus/core/error.h"
#include "chorus/models/model.h"

namespace chorus::callbacks {

void TerminateOnNaN::on_train_batch_end(int64_t batch, const models::Logs& logs) {
  if (!logs.contains("loss")) return;
  const double loss = logs.at("loss");
  if (std::isfinite(loss)) return;
  if (options_.raise_error) {
    throw_error<Error>(
        "TerminateOnNaN: NaN or Inf loss encountered at batch {}. Loss value: {}. Terminating training immediately.",
        batch, python_repr(loss));
  }
  std::cout << "Batch " << batch << ": Invalid loss, terminating training\n";
  model().stop_training = true;
}

}  // namespace chorus::callbacks
