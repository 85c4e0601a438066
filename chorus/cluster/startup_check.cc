#include "chorus/cluster/startup_check.h"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "chorus/comm/communicator.h"
#include "chorus/core/error.h"

namespace chorus::cluster {
namespace {

std::vector<char> join(const std::vector<std::string>& lines) {
  std::vector<char> out;
  for (const auto& line : lines) {
    out.insert(out.end(), line.begin(), line.end());
    out.push_back('\n');
  }
  return out;
}

std::vector<std::string> split(const std::vector<char>& text) {
  std::vector<std::string> lines;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(std::move(line));
      line.clear();
    } else {
      line.push_back(c);
    }
  }
  return lines;
}

}  // namespace

void check_same_signature(gloo::rendezvous::Store& store, const ClusterSpec& cluster,
                          const std::vector<std::string>& signature, const std::string& name) {
  if (!cluster.multi_worker()) return;
  // Every rank makes its checks in the same order: the n-th check of `name` is one check.
  // Counted per rank too, for tests that run several ranks in one process.
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, int> checks;
  int sequence = 0;
  {
    std::lock_guard lock(mutex);
    sequence = checks[{name, cluster.rank}]++;
  }
  const std::string prefix = fmt::format("chorus/signature/{}/{}/", name, sequence);
  store.set(prefix + std::to_string(cluster.rank), join(signature));
  // A rank that failed before its first step never writes its keys: name it.
  auto never_arrived = [&](int rank, const std::exception& e) {
    throw_error<comm::CollectiveError>(
        "start-up check of the {} on rank {} of {} failed: {}; ranks that never arrived: {} (it failed or stalled "
        "before its first step)",
        name, cluster.rank, cluster.world_size, e.what(), rank);
  };
  std::vector<std::vector<std::string>> all;
  for (int rank = 0; rank < cluster.world_size; ++rank) {
    if (rank == cluster.rank) {
      all.push_back(signature);
      continue;
    }
    try {
      all.push_back(split(store.get(prefix + std::to_string(rank))));
    } catch (const std::exception& e) {  // TcpStore's StoreError, or Gloo's FileStore timeout
      never_arrived(rank, e);
    }
  }
  // Rank 0 hosts the store: it leaves (perhaps to exit on the error below) only after
  // every rank has read what it needs.
  store.set(prefix + "read/" + std::to_string(cluster.rank), {'1'});
  if (cluster.rank == 0) {
    for (int rank = 1; rank < cluster.world_size; ++rank) {
      try {
        store.wait({prefix + "read/" + std::to_string(rank)});
      } catch (const std::exception& e) {
        never_arrived(rank, e);
      }
    }
  }
  // Every rank compares every signature with rank 0's, so every rank reaches the same verdict.
  const std::vector<std::string>& reference = all[0];
  for (int rank = 1; rank < cluster.world_size; ++rank) {
    const std::vector<std::string>& other = all[static_cast<size_t>(rank)];
    const size_t n = std::max(reference.size(), other.size());
    for (size_t i = 0; i < n; ++i) {
      const std::string mine = i < other.size() ? "'" + other[i] + "'" : "nothing";
      const std::string theirs = i < reference.size() ? "'" + reference[i] + "'" : "nothing";
      if (mine != theirs) {
        throw_error<ValueError>("the workers disagree on the {}: rank {} has {} where rank 0 has {} (line {})", name,
                                rank, mine, theirs, i + 1);
      }
    }
  }
}

}  // namespace chorus::cluster
