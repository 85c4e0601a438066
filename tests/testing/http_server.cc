// HttpServer: a poll() loop so the thread notices stop_ within 50 ms; requests are read
// up to the blank line that ends the headers (GET has no body), answered, and closed.
#include "tests/testing/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

namespace chorus::testing {
namespace {

constexpr int kPollMs = 50;

const char* reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 404: return "Not Found";
    case 500: return "Internal Server Error";
    default: return "Status";
  }
}

void send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away; nothing to report
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// The request's path, or "" if the client sent no complete request within 2 s.
std::string read_request_path(int fd) {
  std::string request;
  char buffer[4096];
  for (int waited = 0; request.find("\r\n\r\n") == std::string::npos && waited < 2000;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) {
      waited += kPollMs;
      continue;
    }
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) return "";
    request.append(buffer, static_cast<size_t>(n));
  }
  // "GET /path HTTP/1.1"
  const size_t start = request.find(' ');
  const size_t end = request.find(' ', start + 1);
  if (start == std::string::npos || end == std::string::npos) return "";
  return request.substr(start + 1, end - start - 1);
}

}  // namespace

HttpServer::HttpServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error(fmt::format("HttpServer: socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t length = sizeof(addr);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(listen_fd_, 16) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error(fmt::format("HttpServer: bind/listen: {}", std::strerror(errno)));
  }
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { run(); });
}

HttpServer::~HttpServer() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes the poll() at once on Linux
  thread_.join();
  ::close(listen_fd_);
}

void HttpServer::serve(const std::string& path, Response response) {
  std::lock_guard lock(mutex_);
  routes_[path] = std::move(response);
}

std::string HttpServer::url(std::string_view path) const { return fmt::format("http://127.0.0.1:{}{}", port_, path); }

int HttpServer::request_count() const {
  std::lock_guard lock(mutex_);
  return total_;
}

int HttpServer::request_count(const std::string& path) const {
  std::lock_guard lock(mutex_);
  const auto it = counts_.find(path);
  return it == counts_.end() ? 0 : it->second;
}

void HttpServer::run() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    handle(client);
    ::close(client);
  }
}

void HttpServer::handle(int client) {
  const std::string path = read_request_path(client);
  if (path.empty()) return;
  Response response;
  {
    std::lock_guard lock(mutex_);
    ++total_;
    ++counts_[path];
    const auto it = routes_.find(path);
    response = it != routes_.end() ? it->second : Response::not_found();
  }
  std::string head = fmt::format("HTTP/1.1 {} {}\r\nContent-Length: {}\r\nConnection: close\r\n", response.status,
                                 reason(response.status), response.body.size());
  for (const auto& [name, value] : response.headers) head += fmt::format("{}: {}\r\n", name, value);
  send_all(client, head + "\r\n");
  const size_t sent = response.cut_after < 0 ? response.body.size()
                                              : std::min(response.body.size(), static_cast<size_t>(response.cut_after));
  send_all(client, std::string_view(response.body).substr(0, sent));
  if (response.stall) stall_until_closed(client);
}

void HttpServer::stall_until_closed(int client) const {
  char buffer[256];
  while (!stop_) {
    pollfd p{client, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    if (::recv(client, buffer, sizeof(buffer), 0) <= 0) return;  // closed by the client
  }
}

}  // namespace chorus::testing
