// Starting this binary again as a worker process of a local job, for the multi-process
// tests and benchmarks: the job's environment, the start, and a bounded wait. Header-only
// (the benchmarks include it too); stateless and thread-safe.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace chorus::testing {

// `env`, then the rest of this process's environment less the variables `env` sets.
inline std::vector<std::string> with_parent_environment(std::vector<std::string> env) {
  const size_t own = env.size();
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e, key = kv.substr(0, kv.find('=') + 1);
    if (std::none_of(env.begin(), env.begin() + static_cast<std::ptrdiff_t>(own),
                     [&](const std::string& s) { return s.starts_with(key); })) {
      env.push_back(kv);
    }
  }
  return env;
}

// The environment of rank `rank` of a `world`-worker job on 127.0.0.1:`port` (what
// torchrun sets, plus the job id), then `extra`, then the rest of this process's.
inline std::vector<std::string> worker_environment(int rank, int world, int port, const std::string& job,
                                                   const std::vector<std::string>& extra) {
  std::vector<std::string> env = {"RANK=" + std::to_string(rank),       "WORLD_SIZE=" + std::to_string(world),
                                  "LOCAL_RANK=" + std::to_string(rank), "LOCAL_WORLD_SIZE=" + std::to_string(world),
                                  "MASTER_ADDR=127.0.0.1",              "MASTER_PORT=" + std::to_string(port),
                                  "CHORUS_JOB_ID=" + job};
  env.insert(env.end(), extra.begin(), extra.end());
  return with_parent_environment(std::move(env));
}

// Starts this binary with `args` (after argv[0]) and exactly `env`; its stdout goes to
// /dev/null when `quiet`. Returns its pid.
inline pid_t spawn_self(const std::vector<std::string>& args, const std::vector<std::string>& env, bool quiet) {
  std::vector<std::string> all = {"/proc/self/exe"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (const auto& kv : env) envp.push_back(const_cast<char*>(kv.c_str()));
  envp.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (quiet) ::dup2(::open("/dev/null", O_WRONLY), STDOUT_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    std::_Exit(127);
  }
  return pid;
}

// The exit code of `pid` (128 + the signal when killed), or -1 after killing it once it
// has run past `limit`.
inline int wait_exit(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(120)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace chorus::testing
