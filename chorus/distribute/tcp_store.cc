// TcpStore's server and client; the messages are store_wire's. A client sends one request
// at a time and reads its reply; the server answers get and wait when their keys are set,
// so a blocked request costs nothing but its connection.
#include "chorus/distribute/tcp_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "chorus/distribute/store_wire.h"

namespace chorus::distribute {

using store_wire::decode_reply;
using store_wire::decode_request;
using store_wire::encode_reply;
using store_wire::encode_request;
using store_wire::Reply;
using store_wire::Request;
using enum store_wire::Op;

namespace {

using Clock = std::chrono::steady_clock;

bool write_all(int fd, const std::vector<char>& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

addrinfo* resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &result); rc != 0) {
    throw_error<StoreError>("rendezvous store: cannot resolve \"{}\": {}", host, ::gai_strerror(rc));
  }
  return result;
}

}  // namespace

class TcpStore::Server {
 public:
  Server(const std::string& host, int port, std::string job_id) : job_id_(std::move(job_id)) {
    addrinfo* addresses = resolve(host, port, /*passive=*/true);
    int error = 0;
    for (addrinfo* a = addresses; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
        listen_fd_ = fd;
      } else {
        error = errno;
        ::close(fd);
      }
    }
    ::freeaddrinfo(addresses);
    if (listen_fd_ < 0) {
      throw_error<StoreError>("rendezvous store: cannot listen on {}:{}: {} (another job on this port?)", host, port,
                              std::strerror(error));
    }
    if (::pipe2(wake_, O_CLOEXEC) != 0) throw StoreError("rendezvous store: pipe2 failed");
    thread_ = std::thread([this] { loop(); });
  }

  ~Server() {
    const char byte = 0;
    [[maybe_unused]] ssize_t n = ::write(wake_[1], &byte, 1);
    thread_.join();
    for (auto& c : connections_) ::close(c.fd);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

 private:
  struct Connection {
    int fd;
    std::vector<char> in;
    bool greeted = false;
    std::optional<Request> pending;  // a get or wait whose keys are not all set yet
    bool closed = false;
  };

  void loop() {
    for (;;) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (const auto& c : connections_) fds.push_back({c.fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      if (fds[0].revents != 0) return;
      if (fds[1].revents & POLLIN) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          const int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          connections_.push_back({fd, {}, false, std::nullopt, false});
        }
      }
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents != 0) receive(connections_[i - 2]);
      }
      std::erase_if(connections_, [](const Connection& c) {
        if (c.closed) ::close(c.fd);
        return c.closed;
      });
    }
  }

  void receive(Connection& c) {
    char buffer[65536];
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      c.closed = true;
      return;
    }
    c.in.insert(c.in.end(), buffer, buffer + n);
    while (auto request = decode_request(c.in)) handle(c, std::move(*request));
  }

  void send(Connection& c, const std::vector<char>& bytes) {
    if (!write_all(c.fd, bytes)) c.closed = true;
  }

  void error(Connection& c, const std::string& message) {
    send(c, encode_reply(1, message.data(), message.size()));
    c.closed = true;
  }

  void handle(Connection& c, Request r) {
    if (r.op == kHello) {
      const std::string job = r.keys.empty() ? "" : r.keys[0];
      if (job != job_id_) {
        return error(c, fmt::format("this store serves job \"{}\", but the client belongs to job \"{}\"", job_id_, job));
      }
      c.greeted = true;
      return send(c, encode_reply(0, nullptr, 0));
    }
    if (!c.greeted) return error(c, "the client did not say which job it belongs to");
    if (r.op == kSet && r.keys.size() == 1) {
      values_[r.keys[0]] = std::move(r.data);
      send(c, encode_reply(0, nullptr, 0));
      for (auto& other : connections_) answer_if_ready(other);
      return;
    }
    if (r.op == kCheck) {
      const bool all = std::all_of(r.keys.begin(), r.keys.end(), [&](const auto& k) { return values_.contains(k); });
      return send(c, encode_reply(0, all ? "1" : "0", 1));
    }
    if ((r.op == kGet && r.keys.size() == 1) || r.op == kWait) {
      c.pending = std::move(r);
      return answer_if_ready(c);
    }
    error(c, fmt::format("malformed request (op {})", r.op));
  }

  void answer_if_ready(Connection& c) {
    if (!c.pending || c.closed) return;
    for (const auto& key : c.pending->keys) {
      if (!values_.contains(key)) return;
    }
    if (c.pending->op == kGet) {
      const auto& value = values_.at(c.pending->keys[0]);
      send(c, encode_reply(0, value.data(), value.size()));
    } else {
      send(c, encode_reply(0, nullptr, 0));
    }
    c.pending.reset();
  }

  std::string job_id_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::vector<Connection> connections_;
  std::map<std::string, std::vector<char>> values_;
  std::thread thread_;
};

TcpStore::TcpStore(const ClusterSpec& cluster, TcpStoreOptions options)
    : options_(options),
      address_(fmt::format("{}:{}", cluster.master_addr, cluster.master_port)),
      job_id_(cluster.job_id) {
  if (cluster.master_addr.empty() || cluster.master_port <= 0) {
    throw ValueError("TcpStore: the cluster has no master address and port");
  }
  if (cluster.is_chief()) server_ = std::make_unique<Server>(cluster.master_addr, cluster.master_port, job_id_);
  // Connect, retrying with backoff: rank 0 may not be listening yet.
  const auto deadline = Clock::now() + options_.connect_timeout;
  auto backoff = std::chrono::milliseconds(10);
  std::string last_error;
  while (fd_ < 0) {
    addrinfo* addresses = resolve(cluster.master_addr, cluster.master_port, /*passive=*/false);
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
      throw_error<StoreError>("rendezvous store at {}: cannot connect within {} ms ({}); is rank 0 running?", address_,
                              options_.connect_timeout.count(), last_error);
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
  if (!write_all(fd_, encode_request(op, keys, data))) {
    broken_ = true;
    throw_error<StoreError>("rendezvous store at {}: {}: the connection to rank 0 is closed", address_, describe());
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
      throw_error<StoreError>("rendezvous store at {}: {}: rank 0 closed the connection", address_, describe());
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

}  // namespace chorus::distribute
