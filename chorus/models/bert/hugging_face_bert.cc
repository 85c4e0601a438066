// Hugging Face BERT names -> chorus (KerasHub) paths. torch.nn.Linear stores (out, in);
// Dense and EinsumDense kernels are (in, ...out), so linear weights are transposed, and
// the attention kernels reshaped: query (H, H) -> (H, heads, head_dim), attention output
// (H, heads * head_dim) -> (heads, head_dim, H).
#include "chorus/models/bert/hugging_face_bert.h"

#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "chorus/io/safetensors.h"
#include "chorus/ops/ops.h"

namespace chorus::models {
namespace {

struct WeightSource {
  std::vector<std::string> names;  // alternatives, first found wins
  bool linear = false;             // a torch.nn.Linear weight: transpose
};

// chorus path -> where a transformers checkpoint keeps it (without the "bert." prefix
// for the backbone; "cls." names are the masked-LM head's).
std::map<std::string, WeightSource> hugging_face_names(int64_t layers) {
  std::map<std::string, WeightSource> m;
  auto norm = [&](const std::string& path, const std::string& hf) {
    m[path + "/gamma"] = {{hf + ".weight", hf + ".gamma"}};
    m[path + "/beta"] = {{hf + ".bias", hf + ".beta"}};
  };
  auto linear = [&](const std::string& path, const std::string& hf) {
    m[path + "/kernel"] = {{hf + ".weight"}, true};
    m[path + "/bias"] = {{hf + ".bias"}};
  };
  m["token_embedding/embeddings"] = {{"embeddings.word_embeddings.weight"}};
  m["position_embedding/embeddings"] = {{"embeddings.position_embeddings.weight"}};
  m["segment_embedding/embeddings"] = {{"embeddings.token_type_embeddings.weight"}};
  norm("embeddings_layer_norm", "embeddings.LayerNorm");
  for (int64_t i = 0; i < layers; ++i) {
    const std::string path = "transformer_layer_" + std::to_string(i), hf = "encoder.layer." + std::to_string(i);
    for (const char* part : {"query", "key", "value"}) {
      linear(path + "/self_attention_layer/" + part, hf + ".attention.self." + part);
    }
    linear(path + "/self_attention_layer/attention_output", hf + ".attention.output.dense");
    norm(path + "/self_attention_layer_norm", hf + ".attention.output.LayerNorm");
    linear(path + "/feedforward_intermediate_dense", hf + ".intermediate.dense");
    linear(path + "/feedforward_output_dense", hf + ".output.dense");
    norm(path + "/feedforward_layer_norm", hf + ".output.LayerNorm");
  }
  linear("pooled_dense", "pooler.dense");
  linear("mlm_head/intermediate_dense", "cls.predictions.transform.dense");
  norm("mlm_head/intermediate_layer_norm", "cls.predictions.transform.LayerNorm");
  m["mlm_head/output_bias"] = {{"cls.predictions.bias"}};
  return m;
}

// Tensors a checkpoint may hold that chorus does not read: the tied decoder (the token
// table again), its bias (cls.predictions.bias again), position_ids (a constant buffer),
// and BertForPreTraining's next-sentence head.
bool ignorable(const std::string& name) {
  return name == "cls.predictions.decoder.weight" || name == "cls.predictions.decoder.bias" ||
         name.ends_with("embeddings.position_ids") || name.starts_with("cls.seq_relationship.");
}

int64_t config_int(const nlohmann::json& config, const char* key) {
  if (!config.contains(key) || !config[key].is_number_integer()) {
    throw_error<ValueError>("Hugging Face BERT config.json: expected an integer '{}', got {}", key,
                            config.contains(key) ? config[key].dump() : std::string("nothing"));
  }
  return config[key].get<int64_t>();
}

}  // namespace

bool is_hugging_face_bert(const std::filesystem::path& dir) {
  std::ifstream in(dir / "config.json");
  if (!in) return false;
  try {
    const nlohmann::json config = nlohmann::json::parse(in);
    return config.is_object() && config.value("model_type", "") == "bert";
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

BertBackboneConfig hugging_face_bert_config(const nlohmann::json& config) {
  return {.vocabulary_size = config_int(config, "vocab_size"),
          .num_layers = config_int(config, "num_hidden_layers"),
          .num_heads = config_int(config, "num_attention_heads"),
          .hidden_dim = config_int(config, "hidden_size"),
          .intermediate_dim = config_int(config, "intermediate_size"),
          .dropout = config.value("hidden_dropout_prob", 0.1),
          .max_sequence_length = config_int(config, "max_position_embeddings"),
          .num_segments = config.value("type_vocab_size", int64_t{2})};
}

void load_hugging_face_bert_weights(Model& model, const BertBackboneConfig& config, const std::filesystem::path& file) {
  io::SafetensorsContents contents = io::load_safetensors(file);
  std::map<std::string, Tensor> tensors;
  for (auto& [name, tensor] : contents.tensors) {
    tensors[name.starts_with("bert.") ? name.substr(5) : name] = std::move(tensor);
  }
  const auto sources = hugging_face_names(config.num_layers);
  std::vector<std::string> missing, mismatched;
  std::set<std::string> used;
  std::vector<std::pair<Variable, Tensor>> assignments;
  for (const Variable& v : model.weights()) {
    const auto source = sources.find(v.path());
    if (source == sources.end()) {
      missing.push_back(v.path());
      continue;
    }
    const std::string* found = nullptr;
    for (const std::string& name : source->second.names) {
      if (tensors.contains(name)) {
        found = &name;
        break;
      }
    }
    if (found == nullptr) {
      missing.push_back(source->second.names[0]);
      continue;
    }
    used.insert(*found);
    Tensor t = tensors.at(*found);
    if (t.dtype() != kFloat32) t = ops::cast(t, kFloat32);
    if (source->second.linear && t.rank() == 2) t = ops::transpose(t);
    if (t.numel() != v.shape().numel()) {
      mismatched.push_back(fmt::format("{} {} for {} {}", *found, t.shape().to_string(), v.path(), v.shape().to_string()));
      continue;
    }
    const auto dims = v.shape().dims();
    assignments.emplace_back(v, ops::reshape(t, std::vector<int64_t>(dims.begin(), dims.end())));
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, tensor] : tensors) {
    if (!used.contains(name) && !ignorable(name)) unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    throw_error<ValueError>("{}: does not fit {}: missing [{}]; unexpected [{}]; mismatched [{}]", file.string(),
                            model.name(), fmt::join(missing, ", "), fmt::join(unexpected, ", "),
                            fmt::join(mismatched, "; "));
  }
  for (const auto& [variable, value] : assignments) variable.assign(value);
}

}  // namespace chorus::models
