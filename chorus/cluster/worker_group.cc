#include "chorus/cluster/worker_group.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>

#include <gloo/rendezvous/file_store.h>

#include "chorus/cluster/tcp_store.h"
#include "chorus/comm/gloo_communicator.h"
#include "chorus/comm/local_communicator.h"
#include "chorus/core/error.h"
#include "chorus/core/random.h"

namespace chorus::cluster {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1 && (ntohl(address.s_addr) >> 24) == 127;
}

// The first IPv4 address `host` resolves to, or "" when it does not resolve.
std::string resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return "";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  ::freeaddrinfo(found);
  return text;
}

std::chrono::milliseconds collective_deadline() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
      std::min(comm::collective_timeout_from_env(), comm::Seconds(1e8)));
}

}  // namespace

std::string gloo_bind_address(const ClusterSpec& cluster) {
  if (!env("CHORUS_SOCKET_IFNAME").empty()) return "";
  if (std::string address = env("CHORUS_SOCKET_ADDR"); !address.empty()) return address;
  // Peers that reach the master over loopback are all on this host.
  if (cluster.local_world_size >= cluster.world_size || is_loopback(cluster.master_addr)) return "127.0.0.1";
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  const std::string address = resolve(name);
  if (address.empty() || is_loopback(address)) {
    throw_error<ValueError>(
        "multi-worker: {} spans hosts, but this host's name \"{}\" resolves to {}; the other hosts could not reach "
        "it. Set CHORUS_SOCKET_IFNAME (e.g. eth0) or CHORUS_SOCKET_ADDR to the address they should use",
        cluster.to_string(), name, address.empty() ? "nothing" : address);
  }
  return address;
}

namespace {

// The job's Gloo settings for its communicator `name`.
comm::GlooOptions job_gloo_options(const ClusterSpec& cluster, std::chrono::milliseconds deadline, const std::string& name) {
  comm::GlooOptions gloo = comm::gloo_options_from_env();
  gloo.timeout = deadline;
  gloo.hostname = gloo_bind_address(cluster);
  gloo.name = name;
  return gloo;
}

}  // namespace

WorkerGroup::WorkerGroup(ClusterSpec cluster) : cluster_(std::move(cluster)), deadline_(collective_deadline()) {
  const comm::GlooOptions gloo = job_gloo_options(cluster_, deadline_, "default");  // before the store: a bad address fails fast
  store_ = open_store(/*serve=*/true);
  // Unseeded shuffles must agree across workers: each takes its rows of the same batches.
  uint64_t seed = 0;
  if (rank() == 0) {
    std::random_device device;
    seed = (uint64_t{device()} << 32) ^ device();
  }
  set_unseeded_seed_stream(chief_value(seed));
  communicator_ = std::make_unique<comm::GlooCommunicator>(cluster_.rank, cluster_.world_size, *store_, gloo);
}

// Gloo's FileStore on a shared filesystem (CHORUS_RENDEZVOUS_DIR; a directory per job keeps
// jobs apart), else a connection to the job's TCP store, which rank 0 serves (`serve`: the
// first connection) unless the launcher does.
std::unique_ptr<gloo::rendezvous::Store> WorkerGroup::open_store(bool serve) const {
  if (std::string dir = env("CHORUS_RENDEZVOUS_DIR"); !dir.empty()) {
    const std::filesystem::path path = std::filesystem::path(dir) / cluster_.job_id;
    std::error_code error;
    std::filesystem::create_directories(path, error);
    if (error) {
      throw_error<IOError>("multi-worker: cannot create the rendezvous directory {}: {}", path.string(),
                           error.message());
    }
    return std::make_unique<gloo::rendezvous::FileStore>(path.string());
  }
  TcpStoreOptions options;
  options.timeout = deadline_;
  options.client_only = !serve;
  return std::make_unique<TcpStore>(cluster_, options);
}

std::unique_ptr<comm::Communicator> WorkerGroup::connect(const std::string& name, int rank, int size) {
  const std::unique_ptr<gloo::rendezvous::Store> store = open_store(/*serve=*/false);
  return std::make_unique<comm::GlooCommunicator>(rank, size, *store, job_gloo_options(cluster_, deadline_, name));
}

WorkerGroup::~WorkerGroup() = default;

std::string WorkerGroup::chief_bytes(const std::string& value) {
  const std::string key = fmt::format("chorus/chief_value/{}", chief_values_++);
  if (rank() == 0) {
    store_->set(key, std::vector<char>(value.begin(), value.end()));
    return value;
  }
  store_->wait({key}, collective_deadline());
  const std::vector<char> bytes = store_->get(key);
  return std::string(bytes.begin(), bytes.end());
}

uint64_t WorkerGroup::chief_value(uint64_t value) {
  std::string bytes(sizeof value, '\0');
  std::memcpy(bytes.data(), &value, sizeof value);
  bytes = chief_bytes(bytes);
  if (bytes.size() != sizeof value) throw_error<StoreError>("multi-worker: a malformed value from rank 0");
  std::memcpy(&value, bytes.data(), sizeof value);
  return value;
}

void WorkerGroup::on_chief_then_barrier(const std::function<void()>& write) {
  // Rank 0's verdict instead of a bare barrier: a failed write fails every rank now, not
  // at the next collective's deadline.
  uint8_t failed = 0;
  std::exception_ptr error;
  if (rank() == 0) {
    try {
      write();
    } catch (...) {
      error = std::current_exception();
      failed = 1;
    }
  }
  communicator_->broadcast(std::span(&failed, 1), 0);
  if (error) std::rethrow_exception(error);
  if (failed != 0) {
    throw_error<IOError>("multi-worker: rank 0 failed to write the checkpoint (its own error says why)");
  }
}

}  // namespace chorus::cluster
