// Helpers the preprocessing layers share: walking a dataset for adapt() and reading the
// Keras config values they have in common. Internal to chorus/layers/preprocessing;
// stateless and thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "chorus/core/error.h"
#include "chorus/data/dataset.h"
#include "chorus/layers/layer_util.h"
#include "chorus/text/hash.h"

namespace chorus::layers::detail {

// Calls fn(batch, i) for the first `steps` elements of `data` (all when absent), i
// counting from 0, and returns how many there were. Throws ValueError naming `layer`
// for steps <= 0, or for an infinite dataset without steps (adapt would never end).
inline int64_t for_each_batch(const data::Dataset& data, std::optional<int64_t> steps, const std::string& layer,
                              const std::function<void(const Tree&, int64_t)>& fn) {
  if (steps && *steps <= 0) throw_error<ValueError>("{}: adapt expected steps > 0. Received: steps={}", layer, *steps);
  if (!steps && data.cardinality() == data::kInfiniteCardinality) {
    throw_error<ValueError>("{}: adapt was given an infinitely repeating dataset; pass `steps` to say how many "
                            "batches to read",
                            layer);
  }
  int64_t count = 0;
  auto it = data.iterator(0);
  while (!steps || count < *steps) {
    std::optional<Tree> batch = it.next();
    if (!batch) break;
    fn(*batch, count);
    ++count;
  }
  return count;
}

// Keras's salt: null, one integer (used for both key words) or a list of two.
inline std::optional<text::SipHashKey> salt_from_config(ConfigReader& config) {
  const nlohmann::json* found = config.find("salt");
  if (found == nullptr || found->is_null()) return std::nullopt;
  const nlohmann::json& value = *found;
  if (value.is_number_integer()) return text::SipHashKey{value.get<uint64_t>(), value.get<uint64_t>()};
  if (value.is_array() && value.size() == 2 && value[0].is_number_integer() && value[1].is_number_integer()) {
    return text::SipHashKey{value[0].get<uint64_t>(), value[1].get<uint64_t>()};
  }
  throw_error<ValueError>("{}: the salt can only be a list of 2 integers or a single integer. Received: salt={}",
                          config.owner(), value.dump());
}

inline nlohmann::json salt_to_json(const std::optional<text::SipHashKey>& salt) {
  return salt ? nlohmann::json::array({(*salt)[0], (*salt)[1]}) : nlohmann::json();
}

}  // namespace chorus::layers::detail
