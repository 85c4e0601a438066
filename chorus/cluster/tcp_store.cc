// TcpStore, the store's client (TcpStoreServer is the server); the messages are
// store_wire's. A client sends one request at a time and reads its reply.
#include "chorus/cluster/tcp_store.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "chorus/cluster/store_wire.h"
#include "chorus/cluster/tcp_store_server.h"

namespace chorus::cluster {

using store_wire::decode_reply;
using store_wire::encode_request;
using store_wire::Reply;
using enum store_wire::Op;

namespace {

using Clock = std::chrono::steady_clock;

addrinfo* resolve(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &result); rc != 0) {
    throw_error<StoreError>("rendezvous store: cannot resolve \"{}\": {}", host, ::gai_strerror(rc));
  }
  return result;
}

}  // namespace

TcpStore::TcpStore(const ClusterSpec& cluster, TcpStoreOptions options)
    : options_(options),
      address_(fmt::format("{}:{}", cluster.master_addr, cluster.master_port)),
      job_id_(cluster.job_id) {
  if (cluster.master_addr.empty() || cluster.master_port <= 0) {
    throw ValueError("TcpStore: the cluster has no master address and port");
  }
  if (cluster.store_on_launcher) {
    host_ = "chorus launch on node 0";
  } else if (cluster.is_chief() && !options.client_only) {
    server_ = std::make_unique<TcpStoreServer>(cluster.master_addr, cluster.master_port, job_id_);
  }
  connect(cluster.master_addr, cluster.master_port);
}

TcpStore::TcpStore(const std::string& host, int port, std::string job_id, TcpStoreOptions options)
    : options_(options), address_(fmt::format("{}:{}", host, port)), job_id_(std::move(job_id)),
      host_("chorus launch on node 0") {
  connect(host, port);
}

void TcpStore::connect(const std::string& host, int port) {
  // Connect, retrying with backoff: rank 0 may not be listening yet.
  const auto deadline = Clock::now() + options_.connect_timeout;
  auto backoff = std::chrono::milliseconds(10);
  std::string last_error;
  while (fd_ < 0) {
    addrinfo* addresses = resolve(host, port);
    for (addrinfo* a = addresses; a != nullptr && fd_ < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        fd_ = fd;
      } else {
        last_error = std::strerror(errno);
        ::close(fd);
      }
    }
    ::freeaddrinfo(addresses);
    if (fd_ >= 0) break;
    if (Clock::now() + backoff > deadline) {
      throw_error<StoreError>("rendezvous store at {}: cannot connect within {} ms ({}); is {} running?", address_,
                              options_.connect_timeout.count(), last_error, host_);
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
  request(kHello, {job_id_}, {}, options_.connect_timeout, "hello");
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<char> TcpStore::request(uint8_t op, const std::vector<std::string>& keys, const std::vector<char>& data,
                                    std::chrono::milliseconds timeout, const char* what) {
  std::lock_guard lock(mutex_);
  auto describe = [&] {
    std::string names;
    for (const auto& k : keys) names += (names.empty() ? "\"" : ", \"") + k + "\"";
    return op == kHello ? std::string(what) : fmt::format("{}({})", what, names);
  };
  if (broken_) throw_error<StoreError>("rendezvous store at {}: {} after an earlier request failed", address_, describe());
  if (!store_wire::send_all(fd_, encode_request(op, keys, data))) {
    broken_ = true;
    throw_error<StoreError>("rendezvous store at {}: {}: the connection to {} is closed", address_, describe(),
                            host_);
  }
  const auto deadline = Clock::now() + timeout;
  std::vector<char> in;
  std::optional<Reply> reply;
  for (;;) {
    if ((reply = decode_reply(in))) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd pfd{fd_, POLLIN, 0};
    if (left <= 0 || ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(left, 1))) == 0) {
      broken_ = true;
      throw_error<StoreError>("rendezvous store at {}: {} timed out after {} ms", address_, describe(), timeout.count());
    }
    char buffer[65536];
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      broken_ = true;
      throw_error<StoreError>("rendezvous store at {}: {}: {} closed the connection", address_, describe(), host_);
    }
    in.insert(in.end(), buffer, buffer + n);
  }
  if (reply->status != 0) {
    broken_ = true;
    throw_error<StoreError>("rendezvous store at {}: {}: {}", address_, describe(),
                            std::string(reply->payload.begin(), reply->payload.end()));
  }
  return std::move(reply->payload);
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) { set(key, data, options_.timeout); }

void TcpStore::set(const std::string& key, const std::vector<char>& data, std::chrono::milliseconds timeout) {
  request(kSet, {key}, data, timeout, "set");
}

std::vector<char> TcpStore::get(const std::string& key) { return request(kGet, {key}, {}, options_.timeout, "get"); }

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, options_.timeout); }

bool TcpStore::check(const std::vector<std::string>& keys) { return check(keys, options_.timeout); }

bool TcpStore::check(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const std::vector<char> answer = request(kCheck, keys, {}, timeout, "check");
  return answer.size() == 1 && answer[0] == '1';
}

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  request(kWait, keys, {}, timeout, "wait");
}

}  // namespace chorus::cluster
