#include "chorus/cluster/launcher.h"

#include "chorus/cluster/launch_rendezvous.h"
#include "chorus/comm/local_communicator.h"
#include "chorus/core/devices.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chorus/core/error.h"

namespace chorus::cluster {
namespace {

int g_signal_pipe = -1;  // the write end; signals are turned into bytes on it

void on_signal(int signal) {
  const char byte = static_cast<char>(signal);
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe, &byte, 1);
}

struct Worker {
  int rank = 0;
  pid_t pid = -1;
  int output = -1;          // read end of the worker's stdout+stderr
  std::string partial;      // output not yet ended by a newline
  std::optional<int> exit;  // its exit code once it has ended
};

// Writes the complete lines of `data` prefixed with "[rank] ", keeping the rest.
void forward_output(Worker& w, const char* data, size_t size, bool flush) {
  w.partial.append(data, size);
  size_t start = 0;
  for (size_t nl; (nl = w.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    fmt::print("[{}] {}\n", w.rank, std::string_view(w.partial).substr(start, nl - start));
  }
  w.partial.erase(0, start);
  if (flush && !w.partial.empty()) {
    fmt::print("[{}] {}\n", w.rank, w.partial);
    w.partial.clear();
  }
  std::fflush(stdout);
}

// Where the workers meet: node 0's store address and the job id.
struct Rendezvous {
  std::string host;
  int port = 0;
  std::string job_id;
};

pid_t start(const LaunchOptions& o, Worker& w, int local_rank, const Rendezvous& r, const LaunchRound& round) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw_error<Error>("chorus launch: pipe: {}", std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) throw_error<Error>("chorus launch: fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group: stopping a worker stops what it started too
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    ::dup2(pipe_fds[1], STDERR_FILENO);
    const int world = static_cast<int>(round.nodes.size()) * o.nproc_per_node;
    ::setenv("RANK", std::to_string(w.rank).c_str(), 1);
    ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
    ::setenv("LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
    ::setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc_per_node).c_str(), 1);
    ::setenv("MASTER_ADDR", r.host.c_str(), 1);
    ::setenv("MASTER_PORT", std::to_string(r.port).c_str(), 1);
    // Each attempt is a job of its own for the store: a worker left over from an earlier
    // one cannot join it.
    ::setenv("CHORUS_JOB_ID", fmt::format("{}/attempt-{}", r.job_id, round.attempt).c_str(), 1);
    ::setenv("CHORUS_STORE_ON_LAUNCHER", "1", 1);
    ::setenv("CHORUS_RESTART_COUNT", std::to_string(round.attempt).c_str(), 1);  // torchrun's TORCHELASTIC_RESTART_COUNT
    // The host's cores are shared among its workers, as torchrun does with OMP_NUM_THREADS;
    // a value the user set wins.
    const std::string cores = std::to_string(std::max(1, physical_cores() / o.nproc_per_node));
    ::setenv("CHORUS_CPU_CORES", cores.c_str(), 0);
    ::setenv("OMP_NUM_THREADS", cores.c_str(), 0);
    std::vector<char*> argv;
    for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "chorus launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
    std::_Exit(127);
  }
  ::setpgid(pid, pid);  // also here, so a signal sent right away cannot miss the group
  ::close(pipe_fds[1]);
  w.output = pipe_fds[0];
  return pid;
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Binds `port` on loopback (0: the kernel picks one) and closes it: the port bound, or -1.
int bind_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t length = sizeof address;
  int bound = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    bound = ntohs(address.sin_port);
  }
  ::close(fd);
  return bound;
}

}  // namespace

bool claim_loopback_port(int port) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;  // no claim can be made: the bind check alone decides
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string name = fmt::format("chorus-loopback-port-{}", port);
  std::memcpy(address.sun_path + 1, name.data(), name.size());  // sun_path[0] == 0: abstract
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    ::close(fd);
    return false;
  }
  return true;  // fd stays open on purpose: the claim lasts as long as this process
}

int free_loopback_port() {
  int ephemeral_low = 32768;  // Linux's default, if /proc says nothing
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  const int high = ephemeral_low - 1, low = std::max(1025, high - 10000);
  thread_local std::mt19937 random(std::random_device{}());  // a generator per thread: no lock
  for (int attempt = 0; low < high && attempt < 100; ++attempt) {
    const int port = std::uniform_int_distribution<int>(low, high)(random);
    if (bind_loopback(port) == port && claim_loopback_port(port)) return port;
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int port = bind_loopback(0);
    if (port < 0) throw_error<Error>("chorus launch: cannot find a free port: {}", std::strerror(errno));
    if (claim_loopback_port(port)) return port;
  }
  throw Error("chorus launch: cannot find a free port: every port tried is claimed by another chorus process");
}

namespace {

Rendezvous rendezvous_of(const LaunchOptions& o) {
  Rendezvous r{"127.0.0.1", 0, ""};
  if (o.master.empty()) {
    if (o.nnodes > 1) throw ValueError("chorus launch: a job on several hosts needs --master HOST:PORT (node 0's host)");
    r.port = free_loopback_port();
  } else {
    const size_t colon = o.master.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      throw_error<ValueError>("chorus launch: --master expects HOST:PORT, got \"{}\"", o.master);
    }
    r.host = o.master.substr(0, colon);
    r.port = std::atoi(o.master.c_str() + colon + 1);
    if (r.port <= 0 || r.port > 65535) throw_error<ValueError>("chorus launch: bad port in --master \"{}\"", o.master);
  }
  r.job_id = o.job_id.empty() ? fmt::format("{}:{}", r.host, r.port) : o.job_id;
  return r;
}

// Reads what the workers wrote and forwards it with their rank; reaps the ones that ended.
void pump_workers(std::vector<Worker>& workers, const std::vector<pollfd>& fds) {
  for (size_t i = 0; i < workers.size(); ++i) {
    Worker& w = workers[i];
    if (w.output < 0 || fds[i + 1].revents == 0) continue;
    char buffer[65536];
    const ssize_t n = ::read(w.output, buffer, sizeof buffer);
    if (n > 0) {
      forward_output(w, buffer, static_cast<size_t>(n), false);
    } else if (n == 0 || errno != EINTR) {
      forward_output(w, "", 0, true);
      ::close(w.output);
      w.output = -1;
    }
  }
}

struct AttemptResult {
  int code = 0;              // the first failure's exit code, 0 if none
  bool interrupted = false;  // a signal to the launcher stopped it
};

// Starts this host's workers of `round` and runs them to the end. When one fails, here or
// on another host, the others get `survivor_wait` to notice on their own (a collective
// past its deadline names the missing rank), then SIGTERM, then SIGKILL after kill_grace.
AttemptResult run_attempt(const LaunchOptions& o, const Rendezvous& r, const LaunchRound& round,
                          LaunchRendezvous& hosts, int signal_fd) {
  std::vector<Worker> workers(static_cast<size_t>(o.nproc_per_node));
  for (int i = 0; i < o.nproc_per_node; ++i) {
    Worker& w = workers[static_cast<size_t>(i)];
    w.rank = round.index * o.nproc_per_node + i;
    w.pid = start(o, w, i, r, round);
  }
  AttemptResult result;
  using Clock = std::chrono::steady_clock;
  auto term_at = Clock::time_point::max(), kill_at = Clock::time_point::max(), ask_hosts_at = Clock::now();
  bool failed = false;
  auto stop_all = [&](int signal) {
    for (const Worker& w : workers) ::kill(-w.pid, signal);  // the worker's whole group
  };
  auto on_failure = [&](const std::string& what) {
    if (failed) return;
    failed = true;
    fmt::print(stderr, "chorus launch: {}; the other workers get {:.0f} s to finish\n", what,
               std::chrono::duration<double>(o.survivor_wait).count());
    term_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(o.survivor_wait);
  };
  for (bool running = true; running;) {
    std::vector<pollfd> fds{{signal_fd, POLLIN, 0}};
    for (const Worker& w : workers) fds.push_back({w.output, w.output >= 0 ? short(POLLIN) : short(0), 0});
    ::poll(fds.data(), fds.size(), 100);
    if (fds[0].revents & POLLIN) {
      char signal = 0;
      while (::read(signal_fd, &signal, 1) == 1) stop_all(signal);  // forward
      result.interrupted = true;
    }
    pump_workers(workers, fds);
    running = false;
    for (Worker& w : workers) {
      int status = 0;
      if (!w.exit && ::waitpid(w.pid, &status, WNOHANG) == w.pid) {
        w.exit = exit_code(status);
        if (*w.exit != 0 && result.code == 0) {
          result.code = *w.exit;
          if (o.nnodes > 1) hosts.report_failure(round.attempt);
          on_failure(fmt::format("rank {} exited with code {}", w.rank, *w.exit));
        }
      }
      running = running || !w.exit || w.output >= 0;
    }
    if (o.nnodes > 1 && !failed && running && Clock::now() >= ask_hosts_at) {
      ask_hosts_at = Clock::now() + std::chrono::milliseconds(200);
      if (hosts.failure_reported(round.attempt)) on_failure("a worker on another host failed");
    }
    if (Clock::now() >= term_at) {
      stop_all(SIGTERM);
      term_at = Clock::time_point::max();
      kill_at = Clock::now() + o.kill_grace;
    }
    if (Clock::now() >= kill_at) {
      stop_all(SIGKILL);
      kill_at = Clock::time_point::max();
    }
  }
  return result;
}

void check(const LaunchOptions& o) {
  if (o.command.empty()) throw ValueError("chorus launch: no program given (chorus launch -n N -- PROGRAM ARGS...)");
  if (o.nproc_per_node < 1 || o.nnodes < 1) throw ValueError("chorus launch: expected -n >= 1 and --nnodes >= 1");
  if (o.min_nnodes < 0 || o.min_nnodes > o.nnodes) {
    throw_error<ValueError>("chorus launch: --nnodes {}:{} needs 1 <= MIN <= MAX", o.min_nnodes, o.nnodes);
  }
  if (o.node_rank < 0 || o.node_rank >= o.nnodes) {
    throw_error<ValueError>("chorus launch: --node-rank {} is out of range for --nnodes {}", o.node_rank, o.nnodes);
  }
  if (o.max_restarts < 0) throw_error<ValueError>("chorus launch: expected --max-restarts >= 0, got {}", o.max_restarts);
}

// Runs attempts until one succeeds, a signal stops the launcher or the restarts run out.
int run_attempts(const LaunchOptions& o, const Rendezvous& r, int signal_fd) {
  LaunchRendezvous hosts(o, r.host, r.port, r.job_id);
  for (int attempt = 0;; ++attempt) {
    const std::optional<LaunchRound> round = hosts.join(attempt);
    if (!round) {
      fmt::print(stderr, "chorus launch: node {} joined attempt {} after it had started without it\n", o.node_rank,
                 attempt);
      return 1;
    }
    if (static_cast<int>(round->nodes.size()) < o.nnodes && o.node_rank == 0) {
      fmt::print(stderr, "chorus launch: attempt {} runs on {} of {} hosts (nodes {})\n", attempt,
                 round->nodes.size(), o.nnodes, fmt::join(round->nodes, ", "));
    }
    const AttemptResult result = run_attempt(o, r, *round, hosts, signal_fd);
    if (result.code == 0 || result.interrupted || attempt == o.max_restarts) return result.code;
    fmt::print(stderr, "chorus launch: restarting the workers (restart {} of {})\n", attempt + 1, o.max_restarts);
  }
}

}  // namespace

std::chrono::milliseconds LaunchOptions::default_survivor_wait() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(comm::collective_timeout_from_env() + std::chrono::seconds(1));
}

int launch(const LaunchOptions& o) {
  check(o);
  const Rendezvous r = rendezvous_of(o);  // bad --master fails before anything starts
  int signal_pipe[2];
  if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw Error("chorus launch: pipe failed");
  g_signal_pipe = signal_pipe[1];
  struct sigaction action {}, old_int {}, old_term {};
  action.sa_handler = on_signal;
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  auto restore = [&] {
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    ::close(signal_pipe[0]);
    ::close(signal_pipe[1]);
    g_signal_pipe = -1;
  };
  try {
    const int code = run_attempts(o, r, signal_pipe[0]);
    restore();
    return code;
  } catch (...) {
    restore();
    throw;
  }
}

}  // namespace chorus::cluster
