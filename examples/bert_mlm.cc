// KerasNLP's "Data Parallel Training with KerasNLP and tf.distribute" in C++: bert_mlm [WIKITEXT_DIR [VOCAB_FILE]]
// The tutorial's data pipeline, PrintLR and model are in tools/chorus/recipes/bert_mlm_tutorial.cc,
// which `chorus train bert-mlm` runs too; this file is the tutorial's script, in its order.
#include <iostream>

#include "chorus/chorus.h"
#include "tools/chorus/recipes/bert_mlm_tutorial.h"
namespace ch = chorus;

int main(int argc, char** argv) try {
  ch::distribute::MirroredStrategy strategy;
  std::cout << "Number of devices: " << strategy.num_replicas_in_sync() << "\n";
  // Base batch size and learning rate, scaled by the number of replicas.
  const int64_t scaled_batch_size = 32 * strategy.num_replicas_in_sync();
  const double scaled_learning_rate = 1e-4 * strategy.num_replicas_in_sync();
  // Load wikitext-2 (by default `chorus data fetch wikitext-2`'s copy) and filter out short
  // lines; each split shuffled, batched, cached and prefetched.
  const std::string wiki_dir = argc > 1 ? argv[1] : ch::data::fetch("wikitext-2");
  const auto [wiki_train_ds, wiki_val_ds, wiki_test_ds] = ch::recipes::load_wikitext(wiki_dir, scaled_batch_size);
  // A decayed learning rate is common practice in NLP training: PolynomialDecay.
  const int EPOCHS = 3;
  int64_t total_training_steps = 0;  // sum(1 for _ in wiki_train_ds) * EPOCHS
  for (auto it = wiki_train_ds.iterator(); it.next();) total_training_steps += EPOCHS;
  auto lr_schedule = ch::optimizers::schedules::PolynomialDecay(scaled_learning_rate, total_training_steps, 0.0);
  std::vector<ch::Shared<ch::models::Callback>> callbacks = {ch::callbacks::TensorBoard("logs"),
                                                             ch::recipes::PrintLR()};
  auto scope = strategy.scope();  // everything that creates variables: the model and compile()
  // BertMaskedLM.from_preset("bert_tiny_en_uncased") with pooled_dense frozen (unused by the
  // MLM head), compiled with AdamW(lr_schedule); the vocabulary by default <data home>/bert/vocab.txt.
  const std::string vocabulary = argc > 2 ? argv[2] : ch::data::data_home() + "/bert/vocab.txt";
  auto model_dist = ch::recipes::get_compiled_bert_mlm({.vocabulary = vocabulary}, wiki_dir, lr_schedule);
  model_dist->fit(wiki_train_ds, {.epochs = EPOCHS, .callbacks = callbacks, .validation_data = wiki_val_ds});
  // After fitting our model under the scope, we evaluate it normally!
  model_dist->evaluate(wiki_test_ds);
  return 0;
} catch (const std::exception& e) {  // a missing file or vocabulary: its message, not an abort
  std::cerr << "bert_mlm: " << e.what() << "\n";
  return 1;
}
