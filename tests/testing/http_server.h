// A tiny HTTP/1.1 server on 127.0.0.1 for download tests: one background thread accepts
// on an ephemeral port and answers each GET from a table of routes, one connection at a
// time (Connection: close). Methods are thread-safe; routes may change while it runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace chorus::testing {

class HttpServer {
 public:
  struct Response {
    int status = 200;
    std::string body;
    // Extra header lines, e.g. {"Location", "/elsewhere"} for a redirect.
    std::vector<std::pair<std::string, std::string>> headers;
    // Send only this many body bytes, although Content-Length announces the whole body
    // (a truncated transfer). -1 sends the whole body.
    int64_t cut_after = -1;
    // After the (possibly cut) body, keep the connection open and silent until the client
    // gives up or the server stops (a stalled server).
    bool stall = false;

    static Response ok(std::string body) {
      Response r;
      r.body = std::move(body);
      return r;
    }
    static Response redirect(std::string location) {
      Response r;
      r.status = 302;
      r.headers.emplace_back("Location", std::move(location));
      return r;
    }
    static Response not_found() {
      Response r;
      r.status = 404;
      r.body = "not found\n";
      return r;
    }
  };

  // Starts listening on 127.0.0.1 with a port the kernel picks.
  HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Stops accepting and joins the thread (a stalled response is abandoned).
  ~HttpServer();

  // Serves `response` for GET `path` ("/data/file.zip"). Unknown paths get 404.
  void serve(const std::string& path, Response response);
  // "http://127.0.0.1:<port>" followed by `path`.
  std::string url(std::string_view path = "") const;
  // Requests received so far, in total and for one path.
  int request_count() const;
  int request_count(const std::string& path) const;

 private:
  void run();
  void handle(int client);
  void stall_until_closed(int client) const;

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::map<std::string, Response> routes_;  // guarded by mutex_
  std::map<std::string, int> counts_;       // guarded by mutex_
  int total_ = 0;                           // guarded by mutex_
  std::thread thread_;
};

}  // namespace chorus::testing
