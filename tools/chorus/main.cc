// The `chorus` command-line tool: parses the command line with CLI11 and dispatches to
// one subcommand (tools/chorus/*_command.cc). Any chorus error ends the process with
// `chorus: error: ...` on stderr and exit code 1.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "chorus/core/error.h"
#include "tools/chorus/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"chorus: train neural networks with the Keras programming model"};
  app.name("chorus");
  app.require_subcommand(1);
  // One add_*_command per subcommand; inspect and bench come next.
  chorus::cli::add_data_command(app);
  chorus::cli::add_train_command(app);
  chorus::cli::add_launch_command(app);
  chorus::cli::add_text_command(app);
  chorus::cli::add_checkpoint_command(app);
  chorus::cli::add_profile_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const chorus::cli::ExitRequest& request) {
    return request.code;
  } catch (const std::exception& e) {
    fmt::print(stderr, "chorus: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
