// `chorus launch -n N [--nnodes M --node-rank R] [--master HOST:PORT] [--max-restarts K] -- PROGRAM ARGS...`:
// starts N local workers of a multi-worker job (distribute/launcher.h) and exits with
// the first failure's code.
#include <memory>

#include "chorus/distribute/launcher.h"
#include "tools/chorus/commands.h"

namespace chorus::cli {

void add_launch_command(CLI::App& app) {
  auto options = std::make_shared<distribute::LaunchOptions>();
  CLI::App* launch = app.add_subcommand(
      "launch", "Start N local workers of a multi-worker job: chorus launch -n N -- PROGRAM ARGS...");
  launch->add_option("-n,--nproc-per-node", options->nproc_per_node, "Workers to start on this host")
      ->check(CLI::PositiveNumber);
  launch->add_option("--nnodes", options->nnodes, "Hosts in the job (run chorus launch on each)")
      ->check(CLI::PositiveNumber);
  launch->add_option("--node-rank", options->node_rank, "This host's index, 0 .. nnodes-1")
      ->check(CLI::NonNegativeNumber);
  launch->add_option("--master", options->master,
                     "HOST:PORT of rank 0's rendezvous store (default: 127.0.0.1 and a free port; single host only)");
  launch->add_option("--job-id", options->job_id, "Tells jobs sharing hosts apart (default: the master address)");
  launch->add_option("--max-restarts", options->max_restarts,
                     "Start every worker again after a failure, at most this many times (resume with BackupAndRestore)")
      ->check(CLI::NonNegativeNumber);
  launch->add_option("command", options->command, "The program and its arguments, after --")->required();
  launch->callback([options] { throw ExitRequest{distribute::launch(*options)}; });
}

}  // namespace chorus::cli
