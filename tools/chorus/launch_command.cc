// `chorus launch -n N [--nnodes [MIN:]MAX --node-rank R] [--master HOST:PORT] [--max-restarts K] -- PROGRAM ARGS...`:
// starts N local workers of a multi-worker job (distribute/launcher.h) and exits with
// the first failure's code.
#include <chrono>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "chorus/cluster/launcher.h"
#include "tools/chorus/commands.h"

namespace chorus::cli {

void add_launch_command(CLI::App& app) {
  auto options = std::make_shared<cluster::LaunchOptions>();
  CLI::App* launch = app.add_subcommand(
      "launch", "Start N local workers of a multi-worker job: chorus launch -n N -- PROGRAM ARGS...");
  launch->add_option("-n,--nproc-per-node", options->nproc_per_node, "Workers to start on this host")
      ->check(CLI::PositiveNumber);
  launch->add_option_function<std::string>(
            "--nnodes",
            [options](const std::string& value) {
              const size_t colon = value.find(':');
              try {
                size_t used = 0;
                options->nnodes = std::stoi(value.substr(colon + 1), &used);
                if (used != value.size() - (colon + 1)) throw std::invalid_argument(value);
                if (colon != std::string::npos) {
                  options->min_nnodes = std::stoi(value.substr(0, colon), &used);
                  if (used != colon) throw std::invalid_argument(value);
                }
              } catch (const std::logic_error&) {
                throw CLI::ValidationError("--nnodes", fmt::format("expected MAX or MIN:MAX hosts, got \"{}\"", value));
              }
            },
            "Hosts in the job (run chorus launch on each); MIN:MAX lets a restart go on with MIN or more")
      ->type_name("[MIN:]MAX");
  launch->add_option("--node-rank", options->node_rank, "This host's index, 0 .. nnodes-1")
      ->check(CLI::NonNegativeNumber);
  launch->add_option("--master", options->master,
                     "HOST:PORT where node 0's launcher serves the rendezvous store (default: 127.0.0.1 and a free port; single "
                     "host only)");
  launch->add_option("--job-id", options->job_id, "Tells jobs sharing hosts apart (default: the master address)");
  launch->add_option("--max-restarts", options->max_restarts,
                     "Start every worker, on every host, again after a failure, at most this many times (resume with "
                     "BackupAndRestore)")
      ->check(CLI::NonNegativeNumber);
  auto seconds = [](std::chrono::milliseconds& target) {
    return [&target](double s) { target = std::chrono::milliseconds(static_cast<int64_t>(s * 1000)); };
  };
  launch->add_option_function<double>("--join-timeout", seconds(options->join_timeout),
                                      "Seconds node 0 waits for the hosts of an attempt (default 600)")
      ->check(CLI::PositiveNumber);
  launch->add_option_function<double>("--last-call-timeout", seconds(options->last_call),
                                      "With --nnodes MIN:MAX, seconds node 0 waits for more hosts once MIN joined "
                                      "(default 30)")
      ->check(CLI::NonNegativeNumber);
  launch->add_option("command", options->command, "The program and its arguments, after --")->required();
  launch->callback([options] { throw ExitRequest{cluster::launch(*options)}; });
}

}  // namespace chorus::cli
