// `chorus train RECIPE`: runs a seed tutorial as a built-in recipe.
#include <charconv>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chorus/core/error.h"
#include "tools/chorus/commands.h"
#include "tools/chorus/recipes/bert_mlm_tutorial.h"
#include "tools/chorus/recipes/mnist_tutorial.h"
#include "tools/chorus/recipes/retrieval_tutorial.h"

namespace chorus::cli {
namespace {

// Every recipe's --backup-dir, --backup-every, --save-weights, --jit-compile, --profile and
// --profile-batches.
void add_run_options(CLI::App* recipe, recipes::RunOptions& options) {
  recipe->add_option("--backup-dir", options.backup_dir,
                     "Back the training up there (BackupAndRestore) and, run again after a crash, resume exactly");
  recipe->add_option("--backup-every", options.backup_every, "Batches between backups (default: every epoch)")
      ->check(CLI::PositiveNumber);
  recipe->add_option("--save-weights", options.save_weights,
                     "Write the trained weights to this safetensors file (a directory of shards where a weight is "
                     "split)");
  recipe->add_flag("--jit-compile", options.jit_compile,
                   "Run the training, evaluation and prediction steps compiled (Keras's jit_compile), on one device "
                   "and on each data-parallel replica");
  recipe->add_option("--profile", options.profile,
                     "Write the profiled training batches to this file as a Chrome trace (Perfetto, chrome://tracing; "
                     "chorus profile summarize FILE)");
  recipe->add_option_function<std::string>(
      "--profile-batches",
      [&options](const std::string& range) {
        const auto number = [&](std::string_view text) {  // the whole text, or the error
          int64_t value = 0;
          const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
          if (error != std::errc() || end != text.data() + text.size()) {
            throw CLI::ValidationError("--profile-batches", "expected FIRST,LAST (or one batch), got '" + range + "'");
          }
          return value;
        };
        const size_t comma = range.find(',');
        options.profile_first = number(std::string_view(range).substr(0, comma));
        options.profile_last =
            comma == std::string::npos ? options.profile_first : number(std::string_view(range).substr(comma + 1));
      },
      "The training batches --profile records: FIRST,LAST counted from 1 across epochs (default 10,20)");
}

// --timings FILE: the run's PhaseTimes, and when the recipe started and ended (Unix
// seconds: the rest of a process's time is its start-up and exit), as one JSON object.
struct TimingsOption {
  std::string path;
  recipes::PhaseTimes times;
  double start_unix_s = 0;

  void add_to(CLI::App* recipe) {
    recipe->add_option("--timings", path,
                       "Write the seconds spent loading data, in fit, validation, evaluate and predict to this "
                       "JSON file");
  }
  // The PhaseTimes a recipe fills, or null without --timings; marks the start.
  recipes::PhaseTimes* begin() {
    start_unix_s = unix_seconds();
    return path.empty() ? nullptr : &times;
  }
  void write() const {
    if (path.empty()) return;
    nlohmann::json json = times.to_json();
    json["recipe_start_unix_s"] = start_unix_s;
    json["recipe_end_unix_s"] = unix_seconds();
    std::ofstream out(path);
    out << json.dump() << "\n";
    if (!out) throw_error<IOError>("chorus train: cannot write --timings file {}", path);
  }
  static double unix_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

void add_train_command(CLI::App& app) {
  CLI::App* train = app.add_subcommand("train", "Train a built-in recipe (a seed tutorial)");
  train->require_subcommand(1);

  auto options = std::make_shared<recipes::MnistTutorialOptions>();
  CLI::App* mnist = train->add_subcommand(
      "mnist-mlp", "The Keras MNIST tutorial: MLP 784-256-256-10, Adam, batch 64, checkpoint per epoch");
  mnist->add_option("--data", options->data_dir,
                    "Directory with the four MNIST (or Fashion-MNIST) IDX files (default: Debian's Fashion-MNIST)");
  mnist->add_option("--epochs", options->epochs, "Epochs to train")->check(CLI::PositiveNumber);
  mnist->add_option("--batch-size", options->batch_size, "Global batch size")->check(CLI::PositiveNumber);
  mnist->add_option("--checkpoint-dir", options->checkpoint_dir,
                    "Save ckpt-<epoch>.keras here every epoch; resume from the latest one and train --epochs more");
  mnist->add_flag("--normalize", options->normalize, "Divide pixels by 255 (the tutorial trains on raw 0-255)");
  mnist->add_flag("--shuffle", options->shuffle, "Reshuffle the training set every epoch (the tutorial does not)");
  mnist->add_option("--verbose", options->verbose, "0 silent, 1 progress bar, 2 one line per epoch");
  mnist->add_option("--seed", options->seed, "Seed of the initial weights and of --shuffle's order");
  mnist->add_option("--devices", options->devices, "Replicas (MirroredStrategy); 0: every local device")
      ->check(CLI::NonNegativeNumber);
  add_run_options(mnist, options->run);
  auto mnist_timings = std::make_shared<TimingsOption>();
  mnist_timings->add_to(mnist);
  mnist->callback([options, mnist_timings] {
    options->timings = mnist_timings->begin();
    recipes::get_compiled_model()->summary();
    layers::Layer::reset_names();
    recipes::run_mnist_tutorial(*options);
    mnist_timings->write();
  });

  auto retrieval_options = std::make_shared<recipes::RetrievalTutorialOptions>();
  CLI::App* retrieval = train->add_subcommand(
      "movielens-retrieval",
      "The keras-rs retrieval tutorial: two-tower model on MovieLens 100K, Adagrad, batch 1000, top-10 movies");
  retrieval->add_option("--data", retrieval_options->data_dir,
                        "Directory with u.data and u.item (default: fetch movielens-100k into the data cache)");
  retrieval->add_option("--epochs", retrieval_options->epochs, "Epochs to train")->check(CLI::PositiveNumber);
  retrieval->add_option("--batch-size", retrieval_options->batch_size, "Global batch size")
      ->check(CLI::PositiveNumber);
  retrieval->add_option("--validation-freq", retrieval_options->validation_freq, "Validate every N epochs")
      ->check(CLI::PositiveNumber);
  retrieval->add_option("--learning-rate", retrieval_options->learning_rate, "Adagrad's learning rate")
      ->check(CLI::PositiveNumber);
  retrieval->add_option("--verbose", retrieval_options->verbose, "0 silent, 1 progress bar, 2 one line per epoch");
  retrieval->add_option("--seed", retrieval_options->seed, "Seed of the train/test split and the initial weights");
  retrieval->add_option("--devices", retrieval_options->devices,
                        "Replicas (DataParallel); 1: no distribution, 0: every local device")
      ->check(CLI::NonNegativeNumber);
  retrieval->add_option("--table-rows", retrieval_options->table_rows,
                        "Rows of each embedding table (default: the data's ids)")
      ->check(CLI::PositiveNumber);
  retrieval->add_flag("--distributed-embedding", retrieval_options->distributed_embedding,
                      "DistributedEmbedding towers: a multi-worker job splits each table by rows");
  // As the tutorial validates: call(training=False) retrieves the top movies of every
  // validation user, though only the loss is reported.
  retrieval_options->retrieve_in_validation = true;
  retrieval->add_flag_callback(
      "--validation-loss-only", [retrieval_options] { retrieval_options->retrieve_in_validation = false; },
      "Validate by the loss alone, skipping the tutorial's retrieval of every validation user's top movies");
  add_run_options(retrieval, retrieval_options->run);
  auto retrieval_timings = std::make_shared<TimingsOption>();
  retrieval_timings->add_to(retrieval);
  retrieval->callback([retrieval_options, retrieval_timings] {
    retrieval_options->timings = retrieval_timings->begin();
    recipes::RetrievalTutorialResult result = recipes::run_retrieval_tutorial(*retrieval_options);
    recipes::print_recommendations(result.recommendations);
    retrieval_timings->write();
  });

  auto bert_options = std::make_shared<recipes::BertMlmTutorialOptions>();
  CLI::App* bert = train->add_subcommand(
      "bert-mlm", "The KerasNLP tutorial: BERT-tiny masked LM on WikiText-2, MirroredStrategy, AdamW, TensorBoard");
  bert->add_option("--data", bert_options->data_dir,
                   "Directory with wiki.{train,valid,test}.tokens (default: fetch wikitext-2 into the data cache)");
  bert->add_option("--vocabulary", bert_options->vocabulary,
                   "BERT vocab.txt (default: learn a 30,522-token WordPiece vocabulary from the training split)");
  bert->add_option("--devices", bert_options->devices, "Replicas (MirroredStrategy); 0: every local device")
      ->check(CLI::NonNegativeNumber);
  bert->add_option("--epochs", bert_options->epochs, "Epochs to train")->check(CLI::PositiveNumber);
  bert->add_option("--steps-per-epoch", bert_options->steps_per_epoch, "Batches per epoch (default: the whole split)")
      ->check(CLI::PositiveNumber);
  bert->add_option("--sequence-length", bert_options->sequence_length, "Tokens per sequence, [CLS] and [SEP] included")
      ->check(CLI::Range(int64_t{3}, int64_t{512}));
  bert->add_option("--tensorboard", bert_options->tensorboard, "TensorBoard log directory");
  bert->add_option("--verbose", bert_options->verbose, "0 silent, 1 progress bar, 2 one line per epoch");
  bert->add_option("--seed", bert_options->seed, "Seed of the initial weights, shuffles and masks");
  bert->add_option("--dtype-policy", bert_options->dtype_policy,
                   "float32, or mixed_bfloat16: bfloat16 computation on float32 weights")
      ->check(CLI::IsMember({"float32", "mixed_bfloat16"}));
  add_run_options(bert, bert_options->run);
  bert->callback([bert_options] { recipes::run_bert_mlm_tutorial(*bert_options); });
}

}  // namespace chorus::cli
