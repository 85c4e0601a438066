// Runs the `chorus` command-line tool or an example built next to the test binary, for the
// tests of its subcommands and of the examples. Header-only; any thread.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <fmt/format.h>

namespace chorus::testing {

struct ChorusRun {
  int exit_code;       // -1: the binary is missing or was killed
  std::string output;  // stdout, and stderr after it
};

// `PROGRAM ARGUMENTS < stdin_path 2>&1` for a program built next to the test binary (an
// example, the CLI), with `environment` ("NAME='value' ...") in front.
inline ChorusRun run_built(const std::string& program, const std::string& arguments,
                           const std::string& stdin_path = "/dev/null", const std::string& environment = "") {
  const std::filesystem::path binary = std::filesystem::read_symlink("/proc/self/exe").parent_path() / program;
  if (!std::filesystem::exists(binary)) return {-1, "missing " + binary.string()};
  const std::string command =
      fmt::format("{} '{}' {} < '{}' 2>&1", environment, binary.string(), arguments, stdin_path);
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

// `chorus ARGUMENTS < stdin_path 2>&1`, with `environment` in front.
inline ChorusRun run_chorus(const std::string& arguments, const std::string& stdin_path = "/dev/null",
                            const std::string& environment = "") {
  return run_built("chorus", arguments, stdin_path, environment);
}

}  // namespace chorus::testing
