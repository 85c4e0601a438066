// Follows the Python tutorial top to bottom; each step quotes what it ports.
#include "tools/chorus/recipes/bert_mlm_tutorial.h"

#include <algorithm>
#include <iostream>

namespace chorus::recipes {
namespace ch = chorus;

void PrintLR::on_epoch_end(int epoch, const models::Logs& /*logs*/) {
  std::cout << "\nLearning rate for epoch " << epoch + 1 << " is " << model().optimizer().learning_rate() << "\n";
}

namespace {

// Lines longer than 100 bytes: .filter(lambda x: tf.strings.length(x) > 100)
data::Dataset long_lines(const std::string& file) {
  return data::text_line_dataset({file}).filter(
      [](const Tree& x) { return text::strings::length(x.tensor().string_at(0)) > 100; });
}

// A 30,522-token uncased WordPiece vocabulary learned from `train_file`'s long lines.
text::Vocabulary learn_vocabulary(const std::string& train_file, int verbose) {
  auto lines = long_lines(train_file).iterator();
  auto next_line = [&]() -> std::optional<std::string> {
    auto line = lines.next();
    return line ? std::optional(line->tensor().string_at(0)) : std::nullopt;
  };
  auto tokens = text::compute_word_piece_vocabulary(next_line, {.vocabulary_size = 30522, .lowercase = true});
  if (verbose > 0) std::cout << "Learned a vocabulary of " << tokens.size() << " tokens\n";
  return text::Vocabulary(std::move(tokens), "learned from " + train_file);
}

// keras_nlp.models.BertMaskedLM.from_preset("bert_tiny_en_uncased"), or its architecture
// with a learned vocabulary when options.vocabulary is empty.
std::unique_ptr<models::BertMaskedLM> bert_tiny(const BertMlmTutorialOptions& options, const std::string& wiki_dir) {
  const text::BertMaskedLMPreprocessorOptions preprocessing{.sequence_length = options.sequence_length,
                                                            .seed = options.seed};
  if (!options.vocabulary.empty()) {
    return models::BertMaskedLM::from_preset("bert_tiny_en_uncased",
                                             {.vocabulary = options.vocabulary, .preprocessor = preprocessing});
  }
  auto preprocessor = std::make_shared<text::BertMaskedLMPreprocessor>(
      text::BertTokenizer(learn_vocabulary(wiki_dir + "/wiki.train.tokens", options.verbose)), preprocessing);
  models::BertBackboneConfig config = models::find_bert_preset("bert_tiny_en_uncased").config;
  config.vocabulary_size = preprocessor->tokenizer().vocabulary_size();
  return std::make_unique<models::BertMaskedLM>(config, preprocessor);
}

}  // namespace

WikiTextDatasets load_wikitext(const std::string& wiki_dir, int64_t batch_size, uint64_t seed) {
  auto split = [&](const char* file) {  // TextLineDataset(...).filter(...).shuffle(500).batch(...).cache().prefetch()
    return long_lines(wiki_dir + "/" + file).shuffle(500, seed).batch(batch_size).cache().prefetch(data::kAutotune);
  };
  return {.train = split("wiki.train.tokens"), .val = split("wiki.valid.tokens"), .test = split("wiki.test.tokens")};
}

std::unique_ptr<models::BertMaskedLM> get_compiled_bert_mlm(const BertMlmTutorialOptions& options,
                                                            const std::string& wiki_dir,
                                                            optimizers::LearningRate learning_rate) {
  std::unique_ptr<models::BertMaskedLM> model_dist = bert_tiny(options, wiki_dir);
  // This line just sets pooled_dense layer as non-trainiable, we do this to avoid
  // warnings of this layer being unused
  model_dist->get_layer("bert_backbone").get_layer("pooled_dense").set_trainable(false);
  model_dist->compile({.optimizer = optimizers::AdamW(std::move(learning_rate)),
                       .loss = losses::SparseCategoricalCrossentropy({.from_logits = true}),
                       .metrics = {metrics::SparseCategoricalAccuracy()}});
  return model_dist;
}

BertMlmTutorialResult run_bert_mlm_tutorial(const BertMlmTutorialOptions& options) {
  layers::set_random_seed(options.seed);
  std::vector<Device> devices = chorus::list_devices();
  if (options.devices > 0) {
    for (int i = 0; i < options.devices; ++i) chorus::check_device(Device::cpu(i));
    devices.resize(static_cast<size_t>(options.devices));
  }
  distribute::MirroredStrategy strategy(devices);
  if (options.verbose > 0) std::cout << "Number of devices: " << strategy.num_replicas_in_sync() << "\n";

  const int64_t base_batch_size = 32;
  const double base_learning_rate = 1e-4;
  const int64_t scaled_batch_size = base_batch_size * strategy.num_replicas_in_sync();
  const double scaled_learning_rate = base_learning_rate * strategy.num_replicas_in_sync();

  const std::string wiki_dir = options.data_dir.empty() ? data::fetch("wikitext-2") : options.data_dir;
  const WikiTextDatasets wiki = load_wikitext(wiki_dir, scaled_batch_size, options.seed);

  const int EPOCHS = options.epochs;
  // sum(1 for _ in wiki_train_ds.as_numpy_iterator()) * EPOCHS
  int64_t steps_per_epoch = 0;
  for (auto it = wiki.train.iterator(); it.next();) ++steps_per_epoch;
  if (options.steps_per_epoch > 0) steps_per_epoch = std::min(steps_per_epoch, options.steps_per_epoch);
  const int64_t total_training_steps = steps_per_epoch * EPOCHS;
  // The Python builds this schedule but never passes it to the optimizer (it trains at
  // a constant rate); here AdamW gets it, as the tutorial's text intends.
  auto lr_schedule = optimizers::schedules::PolynomialDecay(scaled_learning_rate, total_training_steps, 0.0);

  std::vector<Shared<models::Callback>> callbacks = {callbacks::TensorBoard(options.tensorboard), PrintLR()};

  mixed_precision::set_global_policy(mixed_precision::DTypePolicy(options.dtype_policy));
  std::unique_ptr<models::BertMaskedLM> model_dist;
  {
    auto scope = strategy.scope();  // everything that creates variables: model and compile()
    model_dist = get_compiled_bert_mlm(options, wiki_dir, lr_schedule);
  }
  apply_jit_compile(*model_dist, options.run);
  BertMlmTutorialResult result;
  result.history = model_dist->fit(wiki.train, {.epochs = EPOCHS,
                                                .verbose = options.verbose,
                                                .callbacks = with_run_callbacks(callbacks, options.run),
                                                .validation_data = wiki.val,
                                                .steps_per_epoch = options.steps_per_epoch});
  save_final_weights(*model_dist, options.run);
  result.test_logs = model_dist->evaluate(wiki.test, {.verbose = options.verbose});
  return result;
}

}  // namespace chorus::recipes
