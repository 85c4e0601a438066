#include "chorus/models/bert/hugging_face_bert.h"

#include <fstream>

#include "chorus/io/safetensors.h"
#include "chorus/layers/initializers.h"
#include "chorus/models/bert/bert_masked_lm.h"
#include "chorus/ops/ops.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_names.h"
#include "tests/testing/test_util.h"

namespace chorus::models {
namespace {

using namespace testing::test_names;

class HuggingFaceBertTest : public testing::TempDirTest {
 protected:
  // A one-layer BERT written as transformers' save_pretrained would: torch.nn.Linear
  // weights are (out, in), so Dense kernels are transposed and the attention kernels
  // flattened to (hidden, hidden) first.
  void write_checkpoint(const BertMaskedLM& model, const std::filesystem::path& dir, bool drop_bias = false) {
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "config.json") << R"({"model_type": "bert", "vocab_size": 40, "hidden_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "hidden_dropout_prob": 0.0,
        "max_position_embeddings": 16, "type_vocab_size": 2})";
    std::map<std::string, Tensor> w;
    for (const auto& v : model.weights()) w[v.path()] = v.value();
    auto linear = [&](const std::string& path) {
      const Tensor k = w.at(path + "/kernel");
      const int64_t in = k.dim(0), out = k.numel() / in;
      return ops::transpose(ops::reshape(k, {in, out}));
    };
    auto flat = [&](const std::string& path) { return ops::reshape(w.at(path), {w.at(path).numel()}); };
    const std::string layer = "transformer_layer_0/", hf = "bert.encoder.layer.0.";
    io::NamedTensors t = {
        {"bert.embeddings.word_embeddings.weight", w.at("token_embedding/embeddings")},
        {"bert.embeddings.position_embeddings.weight", w.at("position_embedding/embeddings")},
        {"bert.embeddings.token_type_embeddings.weight", w.at("segment_embedding/embeddings")},
        {"bert.embeddings.LayerNorm.gamma", w.at("embeddings_layer_norm/gamma")},  // the old TF-converted names
        {"bert.embeddings.LayerNorm.beta", w.at("embeddings_layer_norm/beta")},
        {"bert.pooler.dense.weight", linear("pooled_dense")},
        {"bert.pooler.dense.bias", w.at("pooled_dense/bias")},
        {"cls.predictions.transform.dense.weight", linear("mlm_head/intermediate_dense")},
        {"cls.predictions.transform.dense.bias", w.at("mlm_head/intermediate_dense/bias")},
        {"cls.predictions.transform.LayerNorm.weight", w.at("mlm_head/intermediate_layer_norm/gamma")},
        {"cls.predictions.transform.LayerNorm.bias", w.at("mlm_head/intermediate_layer_norm/beta")},
        {"cls.predictions.decoder.weight", w.at("token_embedding/embeddings")},  // tied: ignored
        {"bert.embeddings.position_ids", zeros({1, 16}, kInt64)},                 // a buffer: ignored
    };
    if (!drop_bias) t.push_back({"cls.predictions.bias", w.at("mlm_head/output_bias")});
    for (const char* part : {"query", "key", "value"}) {
      const std::string path = layer + "self_attention_layer/" + part;
      t.push_back({hf + "attention.self." + part + ".weight", linear(path)});
      t.push_back({hf + "attention.self." + part + ".bias", flat(path + "/bias")});
    }
    const std::pair<const char*, const char*> dense[] = {
        {"self_attention_layer/attention_output", "attention.output.dense"},
        {"feedforward_intermediate_dense", "intermediate.dense"},
        {"feedforward_output_dense", "output.dense"}};
    for (const auto& [path, name] : dense) {
      const Tensor k = w.at(layer + path + "/kernel");
      const int64_t out = k.dim(-1);
      t.push_back({hf + name + ".weight", ops::transpose(ops::reshape(k, {k.numel() / out, out}))});
      t.push_back({hf + name + ".bias", w.at(layer + path + "/bias")});
    }
    for (const auto& [path, name] : {std::pair{"self_attention_layer_norm", "attention.output.LayerNorm"},
                                     std::pair{"feedforward_layer_norm", "output.LayerNorm"}}) {
      t.push_back({hf + name + ".weight", w.at(layer + path + "/gamma")});
      t.push_back({hf + name + ".bias", w.at(layer + path + "/beta")});
    }
    io::save_safetensors(dir / "model.safetensors", t);
  }
};

TEST_F(HuggingFaceBertTest, ACheckpointInTransformersLayoutGivesTheSameLogits) {
  layers::set_random_seed(12);
  BertMaskedLM source({.vocabulary_size = 40, .num_layers = 1, .num_heads = 2, .hidden_dim = 8,
                       .intermediate_dim = 16, .dropout = 0.0, .max_sequence_length = 16});
  write_checkpoint(source, dir_ / "hf");
  EXPECT_TRUE(is_hugging_face_bert(dir_ / "hf"));
  EXPECT_FALSE(is_hugging_face_bert(dir_));
  layers::set_random_seed(13);  // other initial weights: every one must come from the file
  auto loaded = BertMaskedLM::from_preset((dir_ / "hf").string(), {.with_preprocessor = false});
  EXPECT_EQ(loaded->backbone().config(), source.backbone().config());
  const Tree x = Tree{{"token_ids", from_values<int32_t>(std::vector<int32_t>{1, 7, 9, 3, 2, 0}, Shape{1, 6})},
                      {"padding_mask", from_values<int32_t>(std::vector<int32_t>{1, 1, 1, 1, 1, 0}, Shape{1, 6})},
                      {"mask_positions", from_values<int32_t>(std::vector<int32_t>{1, 3}, Shape{1, 2})}};
  EXPECT_TRUE(testing::tensors_near((*loaded)(x).tensor(), source(x).tensor(), 1e-6, 1e-6));
}

TEST_F(HuggingFaceBertTest, MissingAndUnexpectedTensorsAreNamed) {
  BertMaskedLM source({.vocabulary_size = 40, .num_layers = 1, .num_heads = 2, .hidden_dim = 8,
                       .intermediate_dim = 16, .dropout = 0.0, .max_sequence_length = 16});
  write_checkpoint(source, dir_ / "hf", /*drop_bias=*/true);
  auto contents = io::load_safetensors(dir_ / "hf" / "model.safetensors");
  contents.tensors.push_back({"bert.encoder.layer.7.output.dense.weight", zeros({2, 2})});
  io::save_safetensors(dir_ / "hf" / "model.safetensors", contents.tensors);
  EXPECT_THAT([&] { BertMaskedLM::from_preset((dir_ / "hf").string(), {.with_preprocessor = false}); },
              ThrowsMessage<ValueError>(AllOf(HasSubstr("missing [cls.predictions.bias]"),
                                              HasSubstr("unexpected [encoder.layer.7.output.dense.weight]"))));
  EXPECT_THAT([] { hugging_face_bert_config({{"model_type", "bert"}, {"vocab_size", 10}}); },
              ThrowsMessage<ValueError>(HasSubstr("expected an integer 'num_hidden_layers', got nothing")));
}

}  // namespace
}  // namespace chorus::models
