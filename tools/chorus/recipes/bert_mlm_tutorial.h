// The KerasNLP BERT masked-LM tutorial's steps, with options: examples/bert_mlm.cc calls them
// in the tutorial's order and `chorus train bert-mlm` runs them with flags (run_bert_mlm_tutorial).
// Results are values the caller owns. Call from one thread (fit runs the replicas itself).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "chorus/chorus.h"
#include "tools/chorus/recipes/run_options.h"

namespace chorus::recipes {

struct BertMlmTutorialOptions {
  // Holds wiki.{train,valid,test}.tokens. Empty: `chorus data fetch wikitext-2`'s copy.
  std::string data_dir;
  // The WordPiece vocabulary, 30,522 tokens as the preset's. Empty: one that size learned
  // from the training split (uncased) with compute_word_piece_vocabulary.
  std::string vocabulary;
  int devices = 0;  // replicas of the MirroredStrategy; 0: every local device
  int epochs = 3;
  int64_t steps_per_epoch = -1;   // -1: the whole split
  int64_t sequence_length = 512;  // the preset preprocessor's
  std::string tensorboard = "logs";
  int verbose = 1;
  uint64_t seed = 42;  // initial weights, shuffles and masks
  // The global dtype policy the model is made under: "float32" or "mixed_bfloat16".
  std::string dtype_policy = "float32";
  RunOptions run;
};

struct BertMlmTutorialResult {
  models::History history;
  models::Logs test_logs;
};

// The tutorial's three splits of the wikitext-2 folder `wiki_dir`: the lines of
// wiki.{train,valid,test}.tokens longer than 100 bytes, shuffle(500, seed), batch(batch_size),
// cache(), prefetch().
struct WikiTextDatasets {
  data::Dataset train, val, test;
};
WikiTextDatasets load_wikitext(const std::string& wiki_dir, int64_t batch_size, uint64_t seed = 42);

// The tutorial's PrintLR: prints the optimizer's learning rate after each epoch.
class PrintLR : public models::Callback {
 public:
  void on_epoch_end(int epoch, const models::Logs& logs) override;
};

// The tutorial's model_dist, made in the current strategy's scope: BertMaskedLM
// from_preset("bert_tiny_en_uncased") with options.vocabulary (or, when empty, its
// architecture with a vocabulary learned from wiki_dir's training split), its preprocessor
// masking options.sequence_length tokens from options.seed; pooled_dense frozen (the
// masked-LM head does not use it); compiled with AdamW(learning_rate), sparse categorical
// cross-entropy from logits and sparse categorical accuracy.
std::unique_ptr<models::BertMaskedLM> get_compiled_bert_mlm(const BertMlmTutorialOptions& options,
                                                            const std::string& wiki_dir,
                                                            optimizers::LearningRate learning_rate);

// `chorus train bert-mlm`: the whole tutorial with `options` (a MirroredStrategy over
// options.devices, the scaled batch size and learning rate, PolynomialDecay, PrintLR and
// TensorBoard, fit and evaluate).
BertMlmTutorialResult run_bert_mlm_tutorial(const BertMlmTutorialOptions& options);

}  // namespace chorus::recipes
