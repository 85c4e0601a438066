#include "chorus/cluster/launch_rendezvous.h"

#include <algorithm>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chorus/cluster/launch_options.h"

namespace chorus::cluster {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

std::string node_key(int attempt, int node) { return fmt::format("launch/{}/node/{}", attempt, node); }
std::string members_key(int attempt) { return fmt::format("launch/{}/members", attempt); }
std::string failed_key(int attempt) { return fmt::format("launch/{}/failed", attempt); }

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

TcpStoreOptions store_options(const LaunchOptions& o) {
  TcpStoreOptions options;
  options.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.join_timeout + o.last_call) + 10s;
  options.connect_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(o.join_timeout);
  return options;
}

}  // namespace

LaunchRendezvous::LaunchRendezvous(const LaunchOptions& options, const std::string& host, int port,
                                   const std::string& job_id)
    : options_(options) {
  if (options.node_rank == 0) server_ = std::make_unique<TcpStoreServer>(host, port, job_id);
  store_ = std::make_unique<TcpStore>(host, port, job_id, store_options(options));
}

LaunchRendezvous::~LaunchRendezvous() = default;

std::optional<LaunchRound> LaunchRendezvous::join(int attempt) {
  store_->set(node_key(attempt, options_.node_rank), {});
  if (server_) {
    const std::vector<int> nodes = close_round(attempt);
    server_->start_attempt(attempt);  // before any worker of this attempt can connect
    store_->set(members_key(attempt), bytes(fmt::format("{}", fmt::join(nodes, " "))));
  }
  const std::vector<char> members = store_->get(members_key(attempt));
  LaunchRound round{attempt, {}, -1};
  std::istringstream in(std::string(members.begin(), members.end()));
  for (int node; in >> node;) {
    if (node == options_.node_rank) round.index = static_cast<int>(round.nodes.size());
    round.nodes.push_back(node);
  }
  if (round.index < 0) return std::nullopt;
  return round;
}

std::vector<int> LaunchRendezvous::close_round(int attempt) {
  const auto deadline = Clock::now() + options_.join_timeout;
  std::optional<Clock::time_point> last_call_ends;
  for (;;) {
    std::vector<int> joined;
    for (int node = 0; node < options_.nnodes; ++node) {
      if (store_->check({node_key(attempt, node)})) joined.push_back(node);
    }
    const int enough = options_.min_nnodes > 0 ? options_.min_nnodes : options_.nnodes;
    if (static_cast<int>(joined.size()) == options_.nnodes) return joined;
    if (static_cast<int>(joined.size()) >= enough) {
      if (!last_call_ends) last_call_ends = Clock::now() + options_.last_call;
      if (Clock::now() >= *last_call_ends) return joined;
    }
    if (Clock::now() >= deadline) {
      throw_error<Error>("chorus launch: attempt {} needs {} of the {} hosts, but only nodes {} joined within {:.0f} s",
                         attempt, enough, options_.nnodes, fmt::join(joined, ", "),
                         std::chrono::duration<double>(options_.join_timeout).count());
    }
    std::this_thread::sleep_for(50ms);
  }
}

void LaunchRendezvous::report_failure(int attempt) {
  if (store_lost_) return;
  try {
    store_->set(failed_key(attempt), {}, 1000ms);
  } catch (const Error&) {
    store_lost_ = true;
  }
}

bool LaunchRendezvous::failure_reported(int attempt) {
  if (store_lost_) return false;
  try {
    return store_->check({failed_key(attempt)}, 1000ms);
  } catch (const Error&) {
    store_lost_ = true;
    return false;
  }
}

}  // namespace chorus::cluster
