// KerasNLP's "Data Parallel Training with KerasNLP and tf.distribute" in C++: bert_mlm [WIKITEXT_DIR [VOCAB_FILE]]
#include <iostream>

#include "chorus/chorus.h"
namespace ch = chorus;

int main(int argc, char** argv) try {
  ch::distribute::MirroredStrategy strategy;
  std::cout << "Number of devices: " << strategy.num_replicas_in_sync() << "\n";
  // Base batch size and learning rate, scaled by the number of replicas.
  const int64_t scaled_batch_size = 32 * strategy.num_replicas_in_sync();
  const double scaled_learning_rate = 1e-4 * strategy.num_replicas_in_sync();
  // Load wikitext-2 (by default `chorus data fetch wikitext-2`'s copy) and filter out short lines.
  const std::string wiki_dir = argc > 1 ? argv[1] : ch::data::fetch("wikitext-2");
  auto load = [&](const std::string& split) {
    return ch::data::text_line_dataset({wiki_dir + "/wiki." + split + ".tokens"})
        .filter([](const ch::Tree& x) { return ch::text::strings::length(x.tensor().string_at(0)) > 100; })
        .shuffle(500).batch(scaled_batch_size).cache().prefetch(ch::data::kAutotune);
  };
  auto wiki_train_ds = load("train"), wiki_val_ds = load("valid"), wiki_test_ds = load("test");
  // A decayed learning rate is common practice in NLP training: PolynomialDecay.
  const int EPOCHS = 3;
  int64_t total_training_steps = 0;  // sum(1 for _ in wiki_train_ds) * EPOCHS
  for (auto it = wiki_train_ds.iterator(); it.next();) total_training_steps += EPOCHS;
  auto lr_schedule = ch::optimizers::schedules::PolynomialDecay(scaled_learning_rate, total_training_steps, 0.0);
  struct PrintLR : ch::models::Callback {
    void on_epoch_end(int epoch, const ch::models::Logs& /*logs*/) override {
      std::cout << "\nLearning rate for epoch " << epoch + 1 << " is " << model().optimizer().learning_rate() << "\n";
    }
  };
  std::vector<ch::Shared<ch::models::Callback>> callbacks = {ch::callbacks::TensorBoard("logs"), PrintLR()};
  auto scope = strategy.scope();  // everything that creates variables: the model and compile()
  const char* vocabulary = argc > 2 ? argv[2] : "";  // empty: <data home>/bert/vocab.txt
  auto model_dist = ch::models::BertMaskedLM::from_preset("bert_tiny_en_uncased", {.vocabulary = vocabulary});
  model_dist->get_layer("bert_backbone").get_layer("pooled_dense").set_trainable(false);  // unused by the MLM head
  model_dist->compile({.optimizer = ch::optimizers::AdamW(lr_schedule),
                       .loss = ch::losses::SparseCategoricalCrossentropy({.from_logits = true}),
                       .metrics = {ch::metrics::SparseCategoricalAccuracy()}});
  model_dist->fit(wiki_train_ds, {.epochs = EPOCHS, .callbacks = callbacks, .validation_data = wiki_val_ds});
  // After fitting our model under the scope, we evaluate it normally!
  model_dist->evaluate(wiki_test_ds);
  return 0;
} catch (const std::exception& e) {  // a missing file or vocabulary: its message, not an abort
  std::cerr << "bert_mlm: " << e.what() << "\n";
  return 1;
}
