// Fuzzes the cluster-variable parsers (discover_cluster: TF_CONFIG, torchrun, Open MPI,
// Slurm, MASTER_ADDR/PORT). The input is the environment as "NAME=VALUE" lines; names
// may repeat (the last wins) and any variable not given is unset.
#include <cstring>
#include <map>
#include <string>

#include "chorus/cluster/cluster.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  std::map<std::string, std::string, std::less<>> env;
  std::string_view text = fuzz::as_text(data, size);
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    // A C string ends at its first NUL, as a real environment variable would.
    std::string value(line.substr(eq + 1));
    value.resize(std::strlen(value.c_str()));
    env[std::string(line.substr(0, eq))] = value;
  }
  const cluster::EnvLookup lookup = [&](const char* name) -> const char* {
    const auto it = env.find(std::string_view(name));
    return it == env.end() ? nullptr : it->second.c_str();
  };
  fuzz::expect_only_chorus_errors("discover_cluster", [&] {
    const cluster::ClusterSpec spec = cluster::discover_cluster(lookup);
    (void)spec.to_string();
  });
  return 0;
}
