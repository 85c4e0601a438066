// The KerasNLP tutorial "Data Parallel Training with KerasNLP and tf.distribute" in C++:
// BERT-tiny masked-LM on WikiText-2 under MirroredStrategy, 3 epochs with validation,
// TensorBoard logs in ./logs, then evaluation on the test split.
//
//   bert_mlm [WIKITEXT_DIR [VOCAB_FILE]]
//
// WIKITEXT_DIR holds wiki.{train,valid,test}.tokens (e.g. ../shared/data/wikitext-2); by
// default `chorus data fetch wikitext-2`'s copy. VOCAB_FILE is a BERT vocab.txt (e.g.
// ../shared/data/bert/vocab.txt); by default one is learned from the training split.
// `chorus train bert-mlm` runs the same with flags to shorten it.
#include <iostream>

#include "tools/chorus/recipes/bert_mlm_tutorial.h"

int main(int argc, char** argv) {
  chorus::recipes::BertMlmTutorialOptions options;
  if (argc > 1) options.data_dir = argv[1];
  if (argc > 2) options.vocabulary = argv[2];
  try {
    chorus::recipes::run_bert_mlm_tutorial(options);
  } catch (const std::exception& e) {
    std::cerr << "bert_mlm: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
