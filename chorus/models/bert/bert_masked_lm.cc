// BertMaskedLM: backbone -> MaskedLMHead tied to the backbone's token table; presets by
// name or folder; raw strings preprocessed inside fit/evaluate as KerasHub tasks do.
#include "chorus/models/bert/bert_masked_lm.h"

#include <algorithm>
#include <fstream>
#include <iostream>

#include "chorus/autograd/tape.h"
#include "chorus/core/creation.h"
#include "chorus/data/download.h"
#include "chorus/jit/tracer.h"
#include "chorus/losses/sparse_categorical_crossentropy.h"
#include "chorus/metrics/sparse_categorical_accuracy.h"
#include "chorus/models/bert/bert_presets.h"
#include "chorus/models/bert/hugging_face_bert.h"
#include "chorus/ops/ops.h"
#include "chorus/optimizers/adam.h"

namespace chorus::models {
namespace {

// Rows of a (B,) string batch are keyed as elements batch_index * 2^32 + row: distinct for
// every row of every batch, whatever the batch sizes.
constexpr uint64_t kRowsPerBatchKey = uint64_t{1} << 32;

// The weighted masks' rows, computed on the host for a compiled step (compiled_step_batch)
// and passed to it under these keys of x.
constexpr const char* kMaskRowsKey = "_weighted_mask_rows";
constexpr const char* kMaskEntriesKey = "_weighted_mask_entries";

// The masks that carry weight (`weights`: the sample weights, flat): `rows` of the
// (B * T, H) sequence output to predict and their `entries` of the (B * M) labels. Throws
// IndexError for a position outside the sequence.
struct WeightedMasks {
  std::vector<int32_t> rows, entries;
};

WeightedMasks weighted_masks(const std::string& head, const Tensor& mask_positions, const std::vector<float>& weights,
                             int64_t sequence) {
  const std::vector<int64_t> positions = ops::cast(mask_positions, kInt64).to_vector<int64_t>();
  const int64_t masks = mask_positions.dim(1);
  WeightedMasks out;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] == 0) continue;
    const auto at = static_cast<int64_t>(i);
    if (positions[i] < 0 || positions[i] >= sequence) {
      throw_error<IndexError>("{}: mask_positions[{}, {}] = {} is outside the sequence [0, {})", head, at / masks,
                              at % masks, positions[i], sequence);
    }
    out.rows.push_back(static_cast<int32_t>((at / masks) * sequence + positions[i]));
    out.entries.push_back(static_cast<int32_t>(i));
  }
  return out;
}

// `masks` padded to one of eight sizes, multiples of an eighth of the B * M entries, with
// entries of weight 0 (row 0), so that a compiled step sees at most eight shapes.
void pad_to_eighths(WeightedMasks& masks, const std::vector<float>& weights) {
  const auto total = static_cast<int64_t>(weights.size());
  const int64_t eighth = std::max<int64_t>((total + 7) / 8, 1);
  const int64_t kept = static_cast<int64_t>(masks.rows.size());
  const int64_t size = std::min(total, std::max<int64_t>((kept + eighth - 1) / eighth, 1) * eighth);
  if (size <= kept) return;
  const auto unweighted = std::find(weights.begin(), weights.end(), 0.0f);  // exists: kept < total
  masks.rows.resize(static_cast<size_t>(size), 0);
  masks.entries.resize(static_cast<size_t>(size), static_cast<int32_t>(unweighted - weights.begin()));
}

// (x, y, sample_weight) as fit reads it, from the preprocessor's dict.
Tree as_training_example(const Tree& example) {
  Tree x = Tree{{"token_ids", example["token_ids"]},
                {"segment_ids", example["segment_ids"]},
                {"padding_mask", example["padding_mask"]},
                {"mask_positions", example["mask_positions"]}};
  return Tree::list({x, example["mask_ids"], example["mask_weights"]});
}

std::shared_ptr<const text::BertMaskedLMPreprocessor> make_preprocessor(const std::filesystem::path& vocabulary,
                                                                          bool lowercase,
                                                                          const BertPresetOptions& options,
                                                                          int64_t vocabulary_size) {
  if (!options.with_preprocessor) return nullptr;
  if (!std::filesystem::exists(vocabulary)) {
    throw_error<IOError>("BertMaskedLM.from_preset: vocabulary file {} not found; pass BertPresetOptions.vocabulary "
                         "(e.g. shared/data/bert/vocab.txt)",
                         vocabulary.string());
  }
  text::BertTokenizer tokenizer =
      text::BertTokenizer::from_file(vocabulary.string(), text::BertTokenizerOptions{.lowercase = lowercase});
  if (tokenizer.vocabulary_size() != vocabulary_size) {
    throw_error<ValueError>("BertMaskedLM.from_preset: the vocabulary {} has {} tokens, but the model's "
                            "vocabulary_size is {}",
                            vocabulary.string(), tokenizer.vocabulary_size(), vocabulary_size);
  }
  return std::make_shared<text::BertMaskedLMPreprocessor>(std::move(tokenizer), options.preprocessor);
}

nlohmann::json read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw_error<IOError>("BertMaskedLM.from_preset: {} has no {}", file.parent_path().string(), file.filename().string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw_error<IOError>("BertMaskedLM.from_preset: {}: malformed JSON: {}", file.string(), e.what());
  }
}

// The backbone config of a folder chorus's save() wrote.
nlohmann::json read_preset_config(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "config.json";
  const nlohmann::json json = read_json_file(file);
  if (json.value("class_name", "") != "BertMaskedLM" || !json.contains("config") ||
      !json["config"].contains("backbone")) {
    throw_error<ValueError>("BertMaskedLM.from_preset: {} holds a {}, neither a BertMaskedLM saved by chorus nor a "
                            "Hugging Face BERT (\"model_type\": \"bert\")",
                            file.string(), json.value("class_name", std::string("config without a class_name")));
  }
  return json["config"]["backbone"];
}

}  // namespace

BertMaskedLM::BertMaskedLM(BertBackboneConfig config, std::shared_ptr<const text::BertMaskedLMPreprocessor> preprocessor,
                           std::string name)
    : Model("BertMaskedLM", std::move(name)), preprocessor_(std::move(preprocessor)) {
  const int64_t vocabulary_size = config.vocabulary_size;
  backbone_ = add<BertBackbone>(std::move(config));
  head_ = add<layers::MaskedLMHead>(
      vocabulary_size, &backbone_->token_embedding(),
      layers::MaskedLMHeadOptions{.intermediate_activation = "gelu",
                                  .kernel_initializer = layers::initializers::truncated_normal(0.0, 0.02),
                                  .name = "mlm_head"});
  // Built now, as KerasHub's functional model is: weights exist for summary() and
  // load_weights before the first batch.
  {
    autograd::NoGradGuard no_grad;
    (*this)(Tree{{"token_ids", zeros({1, 1}, kInt32)}, {"mask_positions", zeros({1, 1}, kInt32)}});
  }
  compile({.optimizer = optimizers::Adam(5e-5),
           .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
           .metrics = {metrics::SparseCategoricalAccuracy()}});
}

std::unique_ptr<BertMaskedLM> BertMaskedLM::from_preset(const std::string& name_or_dir, BertPresetOptions options) {
  const std::filesystem::path dir(name_or_dir);
  const bool is_dir = std::filesystem::is_directory(dir);
  const bool hugging_face = is_dir && is_hugging_face_bert(dir);
  BertBackboneConfig config;
  bool lowercase = true;
  if (hugging_face) {
    config = hugging_face_bert_config(read_json_file(dir / "config.json"));
    if (std::filesystem::exists(dir / "tokenizer_config.json")) {
      lowercase = read_json_file(dir / "tokenizer_config.json").value("do_lower_case", true);
    }
    if (options.vocabulary.empty()) options.vocabulary = dir / "vocab.txt";
  } else if (is_dir) {
    config = BertBackboneConfig::from_json(read_preset_config(dir));
    if (options.vocabulary.empty()) options.vocabulary = dir / "vocab.txt";
  } else {
    const BertPreset& preset = find_bert_preset(name_or_dir);
    config = preset.config;
    lowercase = preset.lowercase;
    if (options.vocabulary.empty()) options.vocabulary = std::filesystem::path(data::data_home()) / "bert" / "vocab.txt";
  }
  if (options.dropout) config.dropout = *options.dropout;
  auto model = std::make_unique<BertMaskedLM>(
      config, make_preprocessor(options.vocabulary, lowercase, options, config.vocabulary_size));
  if (hugging_face) {
    load_hugging_face_bert_weights(*model, config, dir / "model.safetensors");
  } else if (is_dir) {
    model->load_weights(dir / "model.weights.safetensors");
  } else {
    std::cout << "BertMaskedLM.from_preset: " << name_or_dir
              << ": random initial weights (chorus downloads no checkpoints; pass a folder with weights to load them)\n";
  }
  return model;
}

Tree BertMaskedLM::backbone_inputs(const Tree& inputs) const {
  if (!inputs.is_dict() || !inputs.contains("mask_positions")) {
    throw_error<ValueError>("{}: expected the backbone's dict plus \"mask_positions\", got {}", name(),
                            inputs.empty() ? std::string("nothing") : inputs.to_string());
  }
  Tree out = Tree::Dict{};
  for (const auto& [key, value] : inputs.dict()) {
    if (key != "mask_positions" && key != kMaskRowsKey && key != kMaskEntriesKey) out[key] = value;
  }
  return out;
}

Tree BertMaskedLM::call(const Tree& inputs, bool training) {
  const Tree outputs = (*backbone_)(backbone_inputs(inputs), training);
  return (*head_)(outputs["sequence_output"].tensor(), inputs["mask_positions"].tensor());
}

bool BertMaskedLM::predicts_weighted_masks(const Tree& x, const Tree& y, const Tensor& sample_weight) const {
  return loss() != nullptr && sample_weight.defined() && y.is_tensor() && x.is_dict() &&
         x.contains("mask_positions") && x.contains("token_ids") && y.tensor().shape() == sample_weight.shape() &&
         x["mask_positions"].tensor().shape() == sample_weight.shape() && sample_weight.rank() == 2;
}

Tree BertMaskedLM::compiled_step_batch(const Tree& batch) const {
  if (!batch.is_list() || batch.size() != 3 || !predicts_weighted_masks(batch[0], batch[1], batch[2].tensor())) {
    return batch;
  }
  const std::vector<float> weights = ops::cast(batch[2].tensor(), kFloat32).to_vector<float>();
  Tree x = batch[0];
  WeightedMasks masks =
      weighted_masks(head_->name(), x["mask_positions"].tensor(), weights, x["token_ids"].tensor().dim(1));
  pad_to_eighths(masks, weights);
  const auto n = static_cast<int64_t>(masks.rows.size());
  x[kMaskRowsKey] = from_values<int32_t>(masks.rows, Shape{n});
  x[kMaskEntriesKey] = from_values<int32_t>(masks.entries, Shape{n});
  return Tree::list({x, batch[1], batch[2]});
}

Model::StepResult BertMaskedLM::forward_step(const Tree& x, const Tree& y, const Tensor& sample_weight, bool training) {
  // A compiled step reads its rows from the batch (compiled_step_batch); one traced
  // without them predicts every position, letting the weights zero the padding's loss.
  const bool given = x.is_dict() && x.contains(kMaskRowsKey);
  if (!predicts_weighted_masks(x, y, sample_weight) || (!given && jit::Tracer::current() != nullptr)) {
    return Model::forward_step(x, y, sample_weight, training);
  }
  const Tensor weights = ops::cast(sample_weight, kFloat32);
  const int64_t batch = weights.dim(0), masks = weights.dim(1);
  Tensor rows, entries;
  if (given) {
    rows = x[kMaskRowsKey].tensor();
    entries = x[kMaskEntriesKey].tensor();
  } else {
    const WeightedMasks m = weighted_masks(head_->name(), x["mask_positions"].tensor(), weights.to_vector<float>(),
                                           x["token_ids"].tensor().dim(1));
    rows = from_values<int32_t>(m.rows, Shape{static_cast<int64_t>(m.rows.size())});
    entries = from_values<int32_t>(m.entries, Shape{static_cast<int64_t>(m.entries.size())});
  }
  const int64_t n = rows.dim(0);
  const Tensor sequence_output = (*backbone_)(backbone_inputs(x), training)["sequence_output"].tensor();
  StepResult out{.rows = batch};
  out.y_pred = head_->logits_for_rows(sequence_output, rows);
  out.y = ops::take(ops::reshape(y.tensor(), {batch * masks}), entries, 0);
  out.sample_weight = ops::take(ops::reshape(weights, {batch * masks}), entries, 0);
  out.loss = (*loss())(out.y.tensor(), out.y_pred.tensor(), out.sample_weight);
  // Reductions that divide by the number of loss values count all B x M of them.
  const std::string& reduction = loss()->reduction();
  if (reduction != "sum" && reduction != "mean_with_sample_weight" && batch * masks > 0) {
    out.loss = ops::multiply(out.loss, scalar(static_cast<double>(n) / static_cast<double>(batch * masks)));
  }
  return out;
}

data::Dataset BertMaskedLM::preprocess(const data::Dataset& data) const {
  if (!preprocessor_) return data;
  return data.map(
      [pre = preprocessor_](const Tree& element, const data::ElementPosition& at) -> Tree {
        if (!element.is_tensor() || element.tensor().dtype() != kString) return element;
        const Tensor& text = element.tensor();
        const auto epoch = static_cast<uint64_t>(at.epoch), index = static_cast<uint64_t>(at.index);
        if (text.rank() == 0) return as_training_example(pre->call(text.string_at(0), epoch, index));
        if (text.rank() != 1) {
          throw_error<ShapeError>("BertMaskedLM: expected strings of shape () or (batch,), got {} at element {}",
                                  text.shape().to_string(), at.index);
        }
        const auto rows = text.strings();
        return as_training_example(
            pre->call_batch(std::vector<std::string>(rows.begin(), rows.end()), epoch, index * kRowsPerBatchKey));
      },
      {.num_parallel_calls = static_cast<int>(data::kAutotune)});
}

History BertMaskedLM::fit(const data::Dataset& data, FitOptions options) {
  if (options.validation_data) options.validation_data = preprocess(*options.validation_data);
  return Model::fit(preprocess(data), std::move(options));
}

Logs BertMaskedLM::evaluate(const data::Dataset& data, EvaluateOptions options) {
  return Model::evaluate(preprocess(data), std::move(options));
}

nlohmann::json BertMaskedLM::get_config() const {
  return {{"name", name()}, {"trainable", trainable()}, {"backbone", backbone_->config().to_json()}};
}

}  // namespace chorus::models
