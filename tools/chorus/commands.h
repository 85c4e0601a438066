// The chorus CLI's subcommands: each `add_*_command` registers one top-level subcommand
// and its options on the app; the work runs in CLI11 callbacks during parsing. Errors
// propagate as exceptions for main() to report.
#pragma once

#include <CLI/CLI.hpp>

namespace chorus::cli {

// `chorus data fetch NAME [--dir DIR] [--mirror URL]` and `chorus data list [--dir DIR]`.
void add_data_command(CLI::App& app);

// `chorus train mnist-mlp [--data DIR] [--epochs N] [--checkpoint-dir DIR] ...`.
void add_train_command(CLI::App& app);

}  // namespace chorus::cli
