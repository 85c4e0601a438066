#include "chorus/distribute/startup_check.h"

#include <algorithm>

#include <fmt/format.h>

#include "chorus/core/error.h"

namespace chorus::distribute {
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
  const std::string prefix = "chorus/signature/" + name + "/";
  store.set(prefix + std::to_string(cluster.rank), join(signature));
  const std::vector<std::string> reference = split(store.get(prefix + "0"));
  // Every rank reads every signature, so every rank reaches the same verdict.
  for (int rank = 1; rank < cluster.world_size; ++rank) {
    const std::vector<std::string> other =
        rank == cluster.rank ? signature : split(store.get(prefix + std::to_string(rank)));
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

}  // namespace chorus::distribute
