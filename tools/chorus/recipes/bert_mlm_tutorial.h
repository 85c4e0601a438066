// The `chorus train bert-mlm` recipe: the KerasNLP BERT masked-LM tutorial (examples/bert_mlm.cc)
// as a function with options, shared by the CLI, the tests and the benchmarks. Returns its results by
// value. Call from one thread (it runs the replicas itself).
#pragma once

#include <cstdint>
#include <string>

#include "chorus/chorus.h"
#include "tools/chorus/recipes/fault_tolerance.h"

namespace chorus::recipes {

struct BertMlmTutorialOptions {
  // Holds wiki.{train,valid,test}.tokens. Empty: `chorus data fetch wikitext-2`'s copy.
  std::string data_dir;
  // The WordPiece vocabulary. Empty: learned from the training split (uncased, 30,522
  // tokens as the preset's) with compute_word_piece_vocabulary.
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
  FaultToleranceOptions fault_tolerance;
};

struct BertMlmTutorialResult {
  models::History history;
  models::Logs test_logs;
};

BertMlmTutorialResult run_bert_mlm_tutorial(const BertMlmTutorialOptions& options);

}  // namespace chorus::recipes
