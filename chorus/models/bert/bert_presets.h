// BERT presets by name (KerasHub's keras_hub.models.BertBackbone.from_preset names): the
// architecture each fixes, and the lookup with the error listing the known names.
// Immutable tables; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "chorus/models/bert/bert_backbone.h"

namespace chorus::models {

struct BertPreset {
  std::string_view name;
  std::string_view description;
  BertBackboneConfig config;
  bool lowercase;  // the tokenizer's (uncased presets lowercase and strip accents)
};

// bert_tiny_en_uncased, bert_small_en_uncased, bert_medium_en_uncased,
// bert_base_en_uncased: Turc et al. 2019 / Devlin et al. 2018 shapes, vocabulary 30,522.
std::span<const BertPreset> bert_presets();
// Throws ValueError "unknown BERT preset 'x'; known presets: ..." for another name.
const BertPreset& find_bert_preset(std::string_view name);

}  // namespace chorus::models
