#include "chorus/cluster/cluster.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chorus/core/error.h"

namespace chorus::cluster {
namespace {

std::optional<std::string> lookup(const EnvLookup& getenv, const char* name) {
  const char* value = getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

int parse_int(const std::string& value, const char* name, int min) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || errno != 0 || n < min || n > (1L << 24)) {
    throw_error<ValueError>("{}: expected an integer >= {}, got \"{}\"", name, min, value);
  }
  return static_cast<int>(n);
}

std::optional<int> int_var(const EnvLookup& getenv, const char* name, int min) {
  auto value = lookup(getenv, name);
  if (!value) return std::nullopt;
  return parse_int(*value, name, min);
}

// "host:port" -> {host, port}; IPv6 as "[::1]:port".
std::pair<std::string, int> split_host_port(const std::string& address, const char* what) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    throw_error<ValueError>("{}: expected \"host:port\", got \"{}\"", what, address);
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const int port = parse_int(address.substr(colon + 1), what, 1);
  if (port > 65535) throw_error<ValueError>("{}: port {} is out of range [1, 65535] in \"{}\"", what, port, address);
  return {host, port};
}

// TF_CONFIG: {"cluster": {"chief": [..]?, "worker": [..]}, "task": {"type", "index"}}.
// The chief, when listed, is rank 0 and the workers follow (MultiWorkerMirroredStrategy).
ClusterSpec from_tf_config(const std::string& text) {
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw_error<ValueError>("TF_CONFIG: not valid JSON: {}", e.what());
  }
  if (!config.is_object() || !config.contains("cluster") || !config["cluster"].is_object()) {
    throw ValueError("TF_CONFIG: expected an object with \"cluster\" and \"task\"");
  }
  ClusterSpec spec;
  spec.source = "TF_CONFIG";
  const auto& cluster = config["cluster"];
  auto add_role = [&](const char* role) -> int {
    if (!cluster.contains(role)) return static_cast<int>(spec.workers.size());
    if (!cluster[role].is_array()) throw_error<ValueError>("TF_CONFIG: cluster.{} must be a list of \"host:port\"", role);
    const int first = static_cast<int>(spec.workers.size());
    for (const auto& address : cluster[role]) {
      if (!address.is_string()) throw_error<ValueError>("TF_CONFIG: cluster.{} must be a list of \"host:port\"", role);
      spec.workers.push_back(address.get<std::string>());
    }
    return first;
  };
  const int chief_first = add_role("chief");
  const int worker_first = add_role("worker");
  if (spec.workers.empty()) throw ValueError("TF_CONFIG: cluster lists no \"chief\" or \"worker\" tasks");
  const nlohmann::json task = config.contains("task") ? config["task"] : nlohmann::json::object();
  if (!task.is_object()) throw_error<ValueError>("TF_CONFIG: task must be an object, got {}", task.dump());
  const nlohmann::json type_json = task.contains("type") ? task["type"] : nlohmann::json("worker");
  if (!type_json.is_string()) throw_error<ValueError>("TF_CONFIG: task.type must be a string, got {}", type_json.dump());
  const std::string type = type_json.get<std::string>();
  if (type != "worker" && type != "chief") {
    throw_error<ValueError>("TF_CONFIG: task type \"{}\" does not train; expected \"worker\" or \"chief\"", type);
  }
  const nlohmann::json index_json = task.contains("index") ? task["index"] : nlohmann::json(0);
  if (!index_json.is_number_integer()) throw ValueError("TF_CONFIG: task.index must be an integer");
  // Compared as int64: get<int>() would wrap 4294967297 to a valid index 1.
  const int64_t index = index_json.is_number_unsigned() && index_json.get<uint64_t>() > uint64_t{INT64_MAX}
                            ? INT64_MAX
                            : index_json.get<int64_t>();
  const int first = type == "chief" ? chief_first : worker_first;
  const int count = type == "chief" ? worker_first - chief_first : static_cast<int>(spec.workers.size()) - worker_first;
  if (index < 0 || index >= count) {
    throw_error<ValueError>("TF_CONFIG: task {} index {} is out of range: cluster.{} has {} entries", type,
                            index_json.dump(), type, count);
  }
  spec.rank = first + static_cast<int>(index);
  spec.world_size = static_cast<int>(spec.workers.size());
  std::tie(spec.master_addr, spec.master_port) = split_host_port(spec.workers[0], "TF_CONFIG cluster address");
  return spec;
}

// The first host of a Slurm node list: "node[03-05,9],gpu1" -> "node03".
std::string first_slurm_host(const std::string& list) {
  const size_t bracket = list.find('['), comma = list.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket)) {
    return list.substr(0, comma);
  }
  const size_t end = list.find_first_of("-,]", bracket + 1);
  return list.substr(0, bracket) + list.substr(bracket + 1, end - bracket - 1);
}

void check_rank(const ClusterSpec& spec, const char* rank_name, const char* size_name) {
  if (spec.rank >= spec.world_size) {
    throw_error<ValueError>("{}={} is out of range for {}={}", rank_name, spec.rank, size_name, spec.world_size);
  }
  if (spec.local_rank >= spec.local_world_size) {
    throw_error<ValueError>("{}: local rank {} is out of range for {} workers on this host", spec.source,
                            spec.local_rank, spec.local_world_size);
  }
}

}  // namespace

std::string ClusterSpec::to_string() const {
  if (!multi_worker()) return fmt::format("rank {} of {} ({})", rank, world_size, source);
  return fmt::format("rank {} of {} ({}; master {}:{})", rank, world_size, source, master_addr, master_port);
}

ClusterSpec discover_cluster(const EnvLookup& getenv) {
  ClusterSpec spec;
  const char* rank_name = "RANK";
  const char* size_name = "WORLD_SIZE";
  if (auto tf_config = lookup(getenv, "TF_CONFIG")) {
    spec = from_tf_config(*tf_config);
    rank_name = "TF_CONFIG task";
    size_name = "cluster size";
  } else {
    // The launchers that set a rank and a size per process, first match wins.
    struct Launcher {
      const char *source, *rank, *size, *local_rank, *local_size, *job_id;
    };
    static constexpr Launcher kLaunchers[] = {
        {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID"},
        {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
         "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid"},
        {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_JOB_ID"},
    };
    for (const Launcher& l : kLaunchers) {
      auto rank = int_var(getenv, l.rank, 0);
      if (!rank) continue;
      spec.source = l.source;
      rank_name = l.rank;
      size_name = l.size;
      spec.rank = *rank;
      spec.world_size = int_var(getenv, l.size, 1).value_or(1);
      spec.local_rank = int_var(getenv, l.local_rank, 0).value_or(0);
      spec.local_world_size = int_var(getenv, l.local_size, 1).value_or(spec.local_rank + 1);
      spec.job_id = lookup(getenv, l.job_id).value_or("");
      if (spec.source == std::string("Slurm")) {
        if (auto nodes = lookup(getenv, "SLURM_JOB_NODELIST")) spec.master_addr = first_slurm_host(*nodes);
      }
      break;
    }
  }
  if (auto addr = lookup(getenv, "MASTER_ADDR")) spec.master_addr = *addr;
  if (auto port = int_var(getenv, "MASTER_PORT", 1)) {
    if (*port > 65535) throw_error<ValueError>("MASTER_PORT: expected a port from 1 to 65535, got {}", *port);
    spec.master_port = *port;
  }
  if (auto job = lookup(getenv, "CHORUS_JOB_ID")) spec.job_id = *job;
  spec.store_on_launcher = lookup(getenv, "CHORUS_STORE_ON_LAUNCHER") == "1";
  if (spec.multi_worker() && (spec.master_addr.empty() || spec.master_port == 0)) {
    throw_error<ValueError>(
        "{}: a job of {} workers needs rank 0's address: set MASTER_ADDR and MASTER_PORT (got \"{}\" and {})",
        spec.source, spec.world_size, spec.master_addr, spec.master_port);
  }
  check_rank(spec, rank_name, size_name);
  if (spec.job_id.empty() && spec.multi_worker()) spec.job_id = fmt::format("{}:{}", spec.master_addr, spec.master_port);
  return spec;
}

ClusterSpec discover_cluster() {
  return discover_cluster([](const char* name) { return static_cast<const char*>(std::getenv(name)); });
}

ClusterSpec explicit_cluster(ClusterSpec spec) {
  if (spec.world_size < 1) throw_error<ValueError>("ClusterSpec: expected world_size >= 1, got {}", spec.world_size);
  if (spec.rank < 0) throw_error<ValueError>("ClusterSpec: expected rank >= 0, got {}", spec.rank);
  if (spec.source.empty() || spec.source == "single") spec.source = "explicit";
  if (spec.multi_worker() && (spec.master_addr.empty() || spec.master_port <= 0)) {
    throw_error<ValueError>("ClusterSpec: a job of {} workers needs master_addr and master_port", spec.world_size);
  }
  check_rank(spec, "rank", "world_size");
  if (spec.job_id.empty() && spec.multi_worker()) spec.job_id = fmt::format("{}:{}", spec.master_addr, spec.master_port);
  return spec;
}

}  // namespace chorus::cluster
