// The architectures are those of KerasHub's bert presets (keras_hub/src/models/bert/
// bert_presets.py and their config.json files on Kaggle): the uncased English BERTs share
// one 30,522-token WordPiece vocabulary (../shared/data/bert/vocab.txt).
#include "chorus/models/bert/bert_presets.h"

#include <vector>

#include "chorus/core/error.h"

namespace chorus::models {
namespace {

BertBackboneConfig uncased(int64_t layers, int64_t heads, int64_t hidden, int64_t intermediate) {
  return {.vocabulary_size = 30522,
          .num_layers = layers,
          .num_heads = heads,
          .hidden_dim = hidden,
          .intermediate_dim = intermediate,
          .dropout = 0.1,
          .max_sequence_length = 512,
          .num_segments = 2};
}

}  // namespace

std::span<const BertPreset> bert_presets() {
  static const std::vector<BertPreset> presets = {
      {"bert_tiny_en_uncased", "2-layer BERT, 4.39M parameters, lowercased English", uncased(2, 2, 128, 512), true},
      {"bert_small_en_uncased", "4-layer BERT, 28.76M parameters, lowercased English", uncased(4, 8, 512, 2048), true},
      {"bert_medium_en_uncased", "8-layer BERT, 41.37M parameters, lowercased English", uncased(8, 8, 512, 2048),
       true},
      {"bert_base_en_uncased", "12-layer BERT, 109.48M parameters, lowercased English", uncased(12, 12, 768, 3072),
       true},
  };
  return presets;
}

const BertPreset& find_bert_preset(std::string_view name) {
  std::string known;
  for (const BertPreset& preset : bert_presets()) {
    if (preset.name == name) return preset;
    known += (known.empty() ? "" : ", ") + std::string(preset.name);
  }
  throw_error<ValueError>("unknown BERT preset '{}'; known presets: {}", name, known);
}

}  // namespace chorus::models
