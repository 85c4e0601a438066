// The chorus CLI's subcommands: each `add_*_command` registers one top-level subcommand
// and its options on the app; the work runs in CLI11 callbacks during parsing. Errors
// propagate as exceptions for main() to report.
#pragma once

#include <CLI/CLI.hpp>

namespace chorus::cli {

// Thrown by a subcommand whose exit code is not simply success or failure (launch
// returns its workers' first failure); main() exits with `code`.
struct ExitRequest {
  int code;
};

// `chorus data fetch NAME [--dir DIR] [--mirror URL]` and `chorus data list [--dir DIR]`.
void add_data_command(CLI::App& app);

// `chorus train mnist-mlp|movielens-retrieval [--data DIR] [--epochs N] [--devices N] ...`.
void add_train_command(CLI::App& app);

// `chorus launch -n N [--nnodes M --node-rank R] [--master HOST:PORT] -- PROGRAM ARGS...`.
void add_launch_command(CLI::App& app);

// `chorus checkpoint inspect PATH`: a saved model's, weights file's or backup directory's
// contents and the temporaries crashed saves left beside it.
void add_checkpoint_command(CLI::App& app);

// `chorus text tokenize --vocabulary FILE [--no-lowercase] [--strip-accents] [--pieces]` and
// `chorus text learn-vocabulary --size N [--no-lowercase] FILE...`.
void add_text_command(CLI::App& app);

// `chorus profile summarize FILE [--top N]`: a profile's kernels by self time.
void add_profile_command(CLI::App& app);

}  // namespace chorus::cli
