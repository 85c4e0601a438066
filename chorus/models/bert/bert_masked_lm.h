// BertMaskedLM: BERT with a masked-language-modelling head (KerasHub's
// keras_hub.models.BertMaskedLM), optionally with the BertMaskedLMPreprocessor that turns
// raw strings into masked examples inside fit/evaluate/predict, as a KerasHub task does.
// Owns its backbone, head and preprocessor; one thread at a time, like every Model.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "chorus/layers/masked_lm_head.h"
#include "chorus/models/bert/bert_backbone.h"
#include "chorus/models/model.h"
#include "chorus/text/bert_masked_lm_preprocessor.h"

namespace chorus::models {

struct BertPresetOptions {
  // The WordPiece vocabulary (vocab.txt). Empty: the preset folder's vocab.txt; for a
  // preset name, <data home>/bert/vocab.txt. Its size must equal the preset's.
  std::filesystem::path vocabulary;
  // The preprocessor's (BertMaskedLMPreprocessorOptions; KerasHub's defaults).
  text::BertMaskedLMPreprocessorOptions preprocessor;
  bool with_preprocessor = true;
  // Overrides the preset's dropout when set (e.g. 0 to compare outputs exactly).
  std::optional<double> dropout;
};

// Inputs: the backbone's dict plus "mask_positions": (B, M) int. Output: (B, M,
// vocabulary_size) logits for the tokens at those positions. Compiled on construction as
// KerasHub compiles it: Adam(5e-5), SparseCategoricalCrossentropy(from_logits) and
// SparseCategoricalAccuracy, both weighted by the mask_weights passed as sample weights.
//
//   auto model = models::BertMaskedLM::from_preset("bert_tiny_en_uncased", {.vocabulary = "vocab.txt"});
//   model->get_layer("bert_backbone").get_layer("pooled_dense").set_trainable(false);
//   model->fit(lines.batch(32), {.epochs = 3});  // raw strings: the preprocessor masks them
class BertMaskedLM : public Model {
 public:
  // A backbone of `config` with random weights (truncated normal, stddev 0.02).
  explicit BertMaskedLM(BertBackboneConfig config,
                        std::shared_ptr<const text::BertMaskedLMPreprocessor> preprocessor = nullptr,
                        std::string name = "bert_masked_lm");

  // `name_or_dir`: a preset name (bert_presets(); random weights, said on stdout: chorus
  // downloads nothing), a folder written by save() (config.json,
  // model.weights.safetensors), or a Hugging Face BERT folder (config.json,
  // model.safetensors; hugging_face_bert.h) — with vocab.txt unless options.vocabulary
  // names one.
  // Throws ValueError listing the known presets for an unknown name, naming the file for
  // a folder without config or weights, and naming both sizes for a vocabulary whose size
  // differs from the model's; load_weights names every missing or mismatched weight.
  static std::unique_ptr<BertMaskedLM> from_preset(const std::string& name_or_dir, BertPresetOptions options = {});

  Tree call(const Tree& inputs, bool training) override;

  // With a preprocessor, datasets of strings (scalars or (B,) batches) become masked
  // examples (x, mask_ids, mask_weights), masks keyed by (seed, epoch, element);
  // datasets already preprocessed pass through. A call through Model& skips this.
  using Model::evaluate;
  using Model::fit;
  History fit(const data::Dataset& data, FitOptions options = {});
  Logs evaluate(const data::Dataset& data, EvaluateOptions options = {});
  data::Dataset preprocess(const data::Dataset& data) const;

  BertBackbone& backbone() const { return *backbone_; }
  layers::MaskedLMHead& masked_lm_head() const { return *head_; }
  // nullptr when the model was made without one.
  const text::BertMaskedLMPreprocessor* preprocessor() const { return preprocessor_.get(); }

  nlohmann::json get_config() const override;

 protected:
  // Training and evaluation compute logits only for the masked positions that carry
  // weight (KerasHub computes all M per row; the padding rows weigh 0, so the loss,
  // gradients and weighted metrics are the same): with 15% masking of 128 tokens that
  // is ~75% of the rows of the model's largest product. Falls back to call() when the
  // batch has no sample weights of the labels' shape.
  StepResult forward_step(const Tree& x, const Tree& y, const Tensor& sample_weight, bool training) override;
  // Under jit_compile the weighted masks' rows, computed here, padded with rows of weight 0
  // to one of eight sizes: a compiled step predicts ~ as few rows as the eager one, in at
  // most eight signatures.
  Tree compiled_step_batch(const Tree& batch) const override;

 private:
  Tree backbone_inputs(const Tree& inputs) const;
  // Whether forward_step predicts only the weighted masks of this batch.
  bool predicts_weighted_masks(const Tree& x, const Tree& y, const Tensor& sample_weight) const;

  BertBackbone* backbone_;
  layers::MaskedLMHead* head_;
  std::shared_ptr<const text::BertMaskedLMPreprocessor> preprocessor_;
};

}  // namespace chorus::models
