// Loading Hugging Face BERT checkpoints (a folder with config.json, model.safetensors and
// vocab.txt, as transformers' save_pretrained writes them) into chorus's BERT: the
// architecture from config.json and every weight renamed and re-laid-out, as KerasHub's
// convert_bert checkpoint converter does. Free functions; thread-safe.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "chorus/models/bert/bert_backbone.h"

namespace chorus::models {

// True when `dir`/config.json names "model_type": "bert".
bool is_hugging_face_bert(const std::filesystem::path& dir);

// BertBackboneConfig from transformers' BertConfig keys (vocab_size, num_hidden_layers,
// num_attention_heads, hidden_size, intermediate_size, hidden_dropout_prob,
// max_position_embeddings, type_vocab_size). Throws ValueError naming a missing key.
// chorus's BERT, as KerasHub's, uses the tanh GELU in its encoders and LayerNorm
// epsilon 1e-5 in the masked-LM head whatever hidden_act and layer_norm_eps say.
BertBackboneConfig hugging_face_bert_config(const nlohmann::json& config);

// Assigns the weights of `file` (BertForMaskedLM or BertModel names, with or without the
// "bert." prefix; float32 or bfloat16) to `model`, a BertMaskedLM made from `config`
// (BertMaskedLM::from_preset calls this). Linear kernels are transposed and the
// attention ones reshaped to (hidden, heads, head_dim). Throws ValueError listing every
// weight of the model the file lacks, every tensor of the file nothing reads, and every
// shape that differs; nothing is assigned then.
void load_hugging_face_bert_weights(Model& model, const BertBackboneConfig& config, const std::filesystem::path& file);

}  // namespace chorus::models
