// The store's server: one thread polls the listening socket and every connection, and
// answers get and wait when their keys are set, so a blocked request costs nothing but
// its connection. The messages are store_wire's.
#include "chorus/cluster/tcp_store_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "chorus/cluster/store_wire.h"

namespace chorus::cluster {

using store_wire::decode_request;
using store_wire::encode_reply;
using store_wire::Request;
using enum store_wire::Op;

namespace {

int listen_on(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* addresses = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &addresses); rc != 0) {
    throw_error<StoreError>("rendezvous store: cannot resolve \"{}\": {}", host, ::gai_strerror(rc));
  }
  int listen_fd = -1, error = 0;
  for (addrinfo* a = addresses; a != nullptr && listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listen_fd = fd;
    } else {
      error = errno;
      ::close(fd);
    }
  }
  ::freeaddrinfo(addresses);
  if (listen_fd < 0) {
    throw_error<StoreError>("rendezvous store: cannot listen on {}:{}: {} (another job on this port?)", host, port,
                            std::strerror(error));
  }
  return listen_fd;
}

}  // namespace

class TcpStoreServer::Loop {
 public:
  Loop(const std::string& host, int port, std::string job_id)
      : job_id_(std::move(job_id)), listen_fd_(listen_on(host, port)) {
    if (::pipe2(wake_, O_CLOEXEC) != 0) {
      ::close(listen_fd_);
      throw StoreError("rendezvous store: pipe2 failed");
    }
    thread_ = std::thread([this] { run(); });
  }

  ~Loop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake();
    thread_.join();
    for (auto& c : connections_) ::close(c.fd);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  void start_attempt(int attempt) {
    std::lock_guard lock(mutex_);
    attempt_ = attempt;
    const std::string current = attempt_job(attempt);
    const std::string message = fmt::format("the job restarted: attempt {} began", attempt);
    for (Connection& c : connections_) {
      if (!c.greeted || c.job == job_id_ || c.job == current) continue;
      if (c.pending) send(c, encode_reply(1, message.data(), message.size()));
      c.closed = true;  // the loop closes it
    }
    std::erase_if(values_, [&](const auto& entry) {
      const std::string& namespace_ = entry.first.first;
      return namespace_ != job_id_ && namespace_ != current;
    });
    wake();
  }

 private:
  struct Connection {
    int fd;
    std::vector<char> in;
    bool greeted = false;
    std::string job;                 // what it said in its hello: its keys' namespace
    std::optional<Request> pending;  // a get or wait whose keys are not all set yet
    bool closed = false;
  };
  using Key = std::pair<std::string, std::string>;  // (job, key)

  std::string attempt_job(int attempt) const { return fmt::format("{}/attempt-{}", job_id_, attempt); }

  void wake() {
    const char byte = 0;
    [[maybe_unused]] ssize_t n = ::write(wake_[1], &byte, 1);
  }

  void run() {
    for (;;) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      {
        std::lock_guard lock(mutex_);
        for (const auto& c : connections_) fds.push_back({c.fd, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      std::lock_guard lock(mutex_);
      if (fds[0].revents != 0) {
        char drain[64];
        [[maybe_unused]] ssize_t n = ::read(wake_[0], drain, sizeof drain);
        if (stopping_) return;
      }
      // fds[2..] were taken before any connection was added or removed below.
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents != 0 && !connections_[i - 2].closed) receive(connections_[i - 2]);
      }
      if (fds[1].revents & POLLIN) accept_one();
      std::erase_if(connections_, [](const Connection& c) {
        if (c.closed) ::close(c.fd);
        return c.closed;
      });
    }
  }

  void accept_one() {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    connections_.push_back({fd, {}, false, {}, std::nullopt, false});
  }

  void receive(Connection& c) {
    char buffer[65536];
    const ssize_t n = ::recv(c.fd, buffer, sizeof buffer, 0);
    if (n <= 0) {
      c.closed = true;
      return;
    }
    c.in.insert(c.in.end(), buffer, buffer + n);
    while (!c.closed) {
      auto request = decode_request(c.in);
      if (!request) break;
      handle(c, std::move(*request));
    }
  }

  void send(Connection& c, const std::vector<char>& bytes) {
    if (!store_wire::send_all(c.fd, bytes)) c.closed = true;
  }

  void error(Connection& c, const std::string& message) {
    send(c, encode_reply(1, message.data(), message.size()));
    c.closed = true;
  }

  // Why a client of `job` may not join, or "" if it may.
  std::string refusal(const std::string& job) const {
    if (job == job_id_ || job == attempt_job(attempt_)) return "";
    const std::string prefix = job_id_ + "/attempt-";
    int attempt = -1;
    if (job.starts_with(prefix)) {
      const char* end = job.data() + job.size();
      if (auto [p, ec] = std::from_chars(job.data() + prefix.size(), end, attempt); ec == std::errc() && p == end) {
        return fmt::format("this store serves attempt {} of job \"{}\", but the client belongs to attempt {}: {}",
                           attempt_, job_id_, attempt,
                           attempt < attempt_ ? "it is left over from before a restart" : "that has not begun");
      }
    }
    return fmt::format("this store serves job \"{}\", but the client belongs to job \"{}\"", job_id_, job);
  }

  void handle(Connection& c, Request r) {
    if (r.op == kHello) {
      const std::string job = r.keys.empty() ? "" : r.keys[0];
      if (std::string why = refusal(job); !why.empty()) return error(c, why);
      c.greeted = true;
      c.job = job;
      return send(c, encode_reply(0, nullptr, 0));
    }
    if (!c.greeted) return error(c, "the client did not say which job it belongs to");
    if (r.op == kSet && r.keys.size() == 1) {
      values_[{c.job, r.keys[0]}] = std::move(r.data);
      send(c, encode_reply(0, nullptr, 0));
      for (auto& other : connections_) answer_if_ready(other);
      return;
    }
    if (r.op == kCheck) {
      const bool all = std::all_of(r.keys.begin(), r.keys.end(), [&](const auto& k) { return values_.contains({c.job, k}); });
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
      if (!values_.contains({c.job, key})) return;
    }
    if (c.pending->op == kGet) {
      const auto& value = values_.at({c.job, c.pending->keys[0]});
      send(c, encode_reply(0, value.data(), value.size()));
    } else {
      send(c, encode_reply(0, nullptr, 0));
    }
    c.pending.reset();
  }

  const std::string job_id_;
  const int listen_fd_;
  int wake_[2] = {-1, -1};
  std::mutex mutex_;  // everything below, between the loop and start_attempt
  bool stopping_ = false;
  int attempt_ = 0;
  std::vector<Connection> connections_;
  std::map<Key, std::vector<char>> values_;
  std::thread thread_;
};

TcpStoreServer::TcpStoreServer(const std::string& host, int port, std::string job_id)
    : loop_(std::make_unique<Loop>(host, port, std::move(job_id))) {}

TcpStoreServer::~TcpStoreServer() = default;

void TcpStoreServer::start_attempt(int attempt) { loop_->start_attempt(attempt); }

}  // namespace chorus::cluster
