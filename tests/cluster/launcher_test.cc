// chorus launch's engine on real child processes: the environment each worker sees, the
// rank prefix on its output, stopping everyone when one worker fails, restarts — on one
// host, on two (two launchers of the built CLI on this machine), and with a host lost —
// and the free port a single-host job rendezvouses on.
#include "chorus/cluster/launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <thread>

#include "chorus/core/error.h"
#include "tests/testing/free_port.h"
#include "tests/testing/run_chorus.h"
#include "tests/testing/test_names.h"

namespace chorus::cluster {
namespace {

using namespace testing::test_names;

TEST(LauncherTest, WorkersGetTheirEnvironmentAndPrefixedOutput) {
  ::testing::internal::CaptureStdout();
  const int code = launch({.nproc_per_node = 3,
                           .command = {"sh", "-c", "echo rank=$RANK of $WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE "
                                                   "master=$MASTER_ADDR job=${CHORUS_JOB_ID%%:*}; printf tail"}});
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0);
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(out, HasSubstr(fmt::format("[{}] rank={} of 3 local={}/3 master=127.0.0.1 job=127.0.0.1\n", r, r, r)));
    EXPECT_THAT(out, HasSubstr(fmt::format("[{}] tail\n", r)));  // an unterminated last line
  }
}

TEST(LauncherTest, FirstFailureStopsTheOthersAndIsTheExitCode) {
  const auto start = std::chrono::steady_clock::now();
  const int code = launch({.nproc_per_node = 3,
                           .command = {"sh", "-c", "if [ $RANK = 1 ]; then exit 3; fi; sleep 30"},
                           .survivor_wait = std::chrono::seconds(1)});
  EXPECT_EQ(code, 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));  // not the sleeps' 30 s
  EXPECT_EQ(launch({.nproc_per_node = 2,
                    .command = {"sh", "-c", "if [ $RANK = 0 ]; then kill -9 $$; fi; sleep 30"},
                    .survivor_wait = std::chrono::seconds(1)}),
            128 + 9);
  EXPECT_EQ(launch({.nproc_per_node = 1, .command = {"/nonexistent/program"}}), 127);
}

TEST(LauncherTest, SurvivorsOfAFailureGetTheirWaitToReportBeforeBeingStopped) {
  ::testing::internal::CaptureStdout();
  const int code = launch({.nproc_per_node = 2,
                           .command = {"sh", "-c", "if [ $RANK = 1 ]; then exit 4; fi; sleep 1; echo rank 1 is missing"},
                           .survivor_wait = std::chrono::seconds(20)});
  EXPECT_EQ(code, 4);
  EXPECT_THAT(::testing::internal::GetCapturedStdout(), HasSubstr("[0] rank 1 is missing\n"));
}

TEST(LauncherTest, MaxRestartsStartsEveryWorkerAgainWithTheRestartCount) {
  // Rank 1 fails in the first two attempts; the third succeeds.
  const std::vector<std::string> command = {
      "sh", "-c", "echo attempt $CHORUS_RESTART_COUNT job ${CHORUS_JOB_ID#*/}; [ $RANK = 0 ] || [ $CHORUS_RESTART_COUNT = 2 ] || exit 5"};
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(launch({.nproc_per_node = 2, .command = command, .survivor_wait = std::chrono::seconds(5), .max_restarts = 2}), 0);
  const std::string out = ::testing::internal::GetCapturedStdout(), err = ::testing::internal::GetCapturedStderr();
  for (int r = 0; r < 2; ++r) {
    EXPECT_THAT(out, HasSubstr(fmt::format("[{}] attempt 1 job attempt-1\n", r)));
    EXPECT_THAT(out, HasSubstr(fmt::format("[{}] attempt 2 job attempt-2\n", r)));
  }
  EXPECT_THAT(err, HasSubstr("chorus launch: restarting the workers (restart 2 of 2)"));
  EXPECT_EQ(launch({.nproc_per_node = 2, .command = command, .survivor_wait = std::chrono::seconds(5), .max_restarts = 1}), 5);
}

TEST(LauncherTest, BadOptions) {
  EXPECT_THAT([] { launch({}); }, ThrowsMessage<ValueError>(HasSubstr("no program given")));
  EXPECT_THAT([] { launch({.nnodes = 2, .command = {"true"}}); },
              ThrowsMessage<ValueError>(HasSubstr("needs --master HOST:PORT")));
  EXPECT_THAT([] { launch({.nnodes = 2, .node_rank = 2, .master = "h:1", .command = {"true"}}); },
              ThrowsMessage<ValueError>(HasSubstr("--node-rank 2 is out of range for --nnodes 2")));
  EXPECT_THAT([] { launch({.master = "nohostport", .command = {"true"}}); },
              ThrowsMessage<ValueError>(HasSubstr("--master expects HOST:PORT")));
  EXPECT_THAT([] { launch({.command = {"true"}, .max_restarts = -1}); },
              ThrowsMessage<ValueError>(HasSubstr("expected --max-restarts >= 0, got -1")));
  EXPECT_THAT([] { launch({.nnodes = 2, .min_nnodes = 3, .master = "h:1", .command = {"true"}}); },
              ThrowsMessage<ValueError>(HasSubstr("--nnodes 3:2 needs 1 <= MIN <= MAX")));
  const auto bad = chorus::testing::run_chorus("launch --nnodes 1:x -- true");
  if (bad.exit_code == -1) GTEST_SKIP() << bad.output;
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("expected MAX or MIN:MAX hosts, got \"1:x\""));
}

// Runs `chorus launch` as node `node` of a job of `nnodes` hosts on this machine, each
// with one worker running `script`.
std::future<chorus::testing::ChorusRun> host(int node, const std::string& nnodes, int port, const std::string& script) {
  return std::async(std::launch::async, [=] {
    return chorus::testing::run_chorus(
        fmt::format("launch --nnodes {} --node-rank {} --master 127.0.0.1:{} --max-restarts 1 --last-call-timeout 3 "
                    "-n 1 -- sh -c '{}'",
                    nnodes, node, port, script),
        "/dev/null", "CHORUS_COLLECTIVE_TIMEOUT=1");  // survivors get 2 s
  });
}

TEST(LauncherTest, AFailureOnOneHostRestartsTheWorkersOfEveryHost) {
  const int port = chorus::testing::free_port();
  const std::string script =
      "echo attempt $CHORUS_RESTART_COUNT rank $RANK of $WORLD_SIZE; "
      "if [ $CHORUS_RESTART_COUNT = 0 ]; then if [ $RANK = 1 ]; then exit 3; fi; sleep 30; fi";
  auto node0 = host(0, "2", port, script), node1 = host(1, "2", port, script);
  const auto run0 = node0.get(), run1 = node1.get();
  if (run0.exit_code == -1) GTEST_SKIP() << run0.output;
  EXPECT_EQ(run0.exit_code, 0) << run0.output;
  EXPECT_EQ(run1.exit_code, 0) << run1.output;
  EXPECT_THAT(run0.output, HasSubstr("[0] attempt 0 rank 0 of 2\n"));
  EXPECT_THAT(run0.output, HasSubstr("chorus launch: a worker on another host failed; the other workers get 2 s"));
  EXPECT_THAT(run0.output, HasSubstr("[0] attempt 1 rank 0 of 2\n"));
  EXPECT_THAT(run1.output, HasSubstr("chorus launch: rank 1 exited with code 3"));
  EXPECT_THAT(run1.output, HasSubstr("[1] attempt 1 rank 1 of 2\n"));
}

TEST(LauncherTest, AnElasticJobRestartsWithTheHostsLeftWhenOneIsLost) {
  const int port = chorus::testing::free_port();
  // In attempt 0 rank 1's host goes down (its launcher is killed) and rank 0 then fails.
  const std::string script =
      "echo attempt $CHORUS_RESTART_COUNT rank $RANK of $WORLD_SIZE; "
      "if [ $CHORUS_RESTART_COUNT = 0 ]; then if [ $RANK = 1 ]; then kill -9 $PPID; exit 1; fi; sleep 1; exit 7; fi";
  auto node0 = host(0, "1:2", port, script), node1 = host(1, "1:2", port, script);
  const auto run0 = node0.get(), run1 = node1.get();
  if (run0.exit_code == -1) GTEST_SKIP() << run0.output;
  EXPECT_EQ(run0.exit_code, 0) << run0.output;
  EXPECT_NE(run1.exit_code, 0) << run1.output;
  EXPECT_THAT(run0.output, HasSubstr("[0] attempt 0 rank 0 of 2\n"));
  EXPECT_THAT(run0.output, HasSubstr("chorus launch: attempt 1 runs on 1 of 2 hosts (nodes 0)"));
  EXPECT_THAT(run0.output, HasSubstr("[0] attempt 1 rank 0 of 1\n"));
  EXPECT_THAT(run1.output, Not(HasSubstr("attempt 1")));
}

TEST(LauncherTest, TooFewHostsWithinTheJoinTimeoutAndAHostTooLateAreNamed) {
  const int port = chorus::testing::free_port();
  EXPECT_THAT(
      [&] {
        launch({.nnodes = 2, .master = fmt::format("127.0.0.1:{}", port), .command = {"true"},
                .join_timeout = std::chrono::seconds(1)});
      },
      ThrowsMessage<Error>(HasSubstr("chorus launch: attempt 0 needs 2 of the 2 hosts, but only nodes 0 joined "
                                     "within 1 s")));
  // Node 0 starts at once alone (MIN 1, no last call); node 1 comes a second later.
  const int elastic_port = chorus::testing::free_port();
  auto node0 = std::async(std::launch::async, [=] {
    return chorus::testing::run_chorus(fmt::format(
        "launch --nnodes 1:2 --node-rank 0 --master 127.0.0.1:{} --last-call-timeout 0 -n 1 -- sleep 3", elastic_port));
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const auto late = chorus::testing::run_chorus(fmt::format(
      "launch --nnodes 1:2 --node-rank 1 --master 127.0.0.1:{} -n 1 -- true", elastic_port));
  const auto run0 = node0.get();
  if (late.exit_code == -1) GTEST_SKIP() << late.output;
  EXPECT_EQ(run0.exit_code, 0) << run0.output;
  EXPECT_EQ(late.exit_code, 1) << late.output;
  EXPECT_THAT(late.output, HasSubstr("chorus launch: node 1 joined attempt 0 after it had started without it"));
}

TEST(LauncherTest, FreePortsComeFromBelowTheEphemeralRangeAndCanBeListenedOn) {
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  for (int i = 0; i < 20; ++i) {
    const int port = free_loopback_port();
    EXPECT_GT(port, 1024);
    if (ephemeral_low > 1026) {
      EXPECT_LT(port, ephemeral_low);
    }
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0) << port;
    EXPECT_EQ(::listen(fd, 1), 0) << port;
    ::close(fd);
  }
}

// Two tests that each check a port free before their rank 0 binds it could pick the same
// one (a CI run failed so: one test's workers met the other's store). The claim excludes
// that between processes on this host and within one, and ends with the process.
TEST(LauncherTest, AFreePortIsClaimedUntilTheProcessThatPickedItEnds) {
  const int port = free_loopback_port();
  EXPECT_FALSE(claim_loopback_port(port)) << "this process already holds " << port;
  const int other = free_loopback_port();
  EXPECT_NE(other, port);
  const auto in_child = [](int port) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(claim_loopback_port(port) ? 1 : 0);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 1;
  };
  EXPECT_FALSE(in_child(port)) << "another process could claim " << port;
  int unclaimed = port + 1;
  while (unclaimed == other) ++unclaimed;
  ASSERT_TRUE(in_child(unclaimed));
  EXPECT_TRUE(claim_loopback_port(unclaimed)) << "the child's claim outlived it";
}

}  // namespace
}  // namespace chorus::cluster
