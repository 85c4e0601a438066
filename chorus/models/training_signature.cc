#include "chorus/models/training_signature.h"

#include <algorithm>

#include <fmt/format.h>

namespace chorus::models {

std::vector<std::string> training_signature(const Model& model, int64_t global_batch_size) {
  std::vector<std::string> lines;
  const std::vector<Variable> trainable = model.trainable_weights();
  for (const Variable& v : model.weights()) {
    const bool is_trainable =
        std::any_of(trainable.begin(), trainable.end(), [&](const Variable& t) { return t.is(v); });
    lines.push_back(fmt::format("{} {} {}{}", v.path(), v.shape().to_string(), dtype_name(v.dtype()),
                                is_trainable ? "" : " non-trainable"));
  }
  lines.push_back(fmt::format("global_batch_size {}", global_batch_size));
  if (model.compiled()) {
    nlohmann::json optimizer = model.optimizer().get_config();
    optimizer.erase("name");  // automatic names may differ between processes
    lines.push_back("optimizer " + optimizer.dump());
  }
  return lines;
}

}  // namespace chorus::models
