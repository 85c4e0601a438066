// The address a worker's Gloo device binds (gloo_bind_address): loopback only when every
// worker is on this host, the explicit settings first, and a clear refusal when a job
// spans hosts but this host's name resolves to loopback. Also Gloo's settings from the
// environment.
#include "chorus/cluster/worker_group.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "chorus/comm/gloo_communicator.h"
#include "chorus/core/error.h"
#include "tests/testing/test_names.h"

namespace chorus::cluster {
namespace {

using namespace testing::test_names;

// Sets an environment variable for one test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() { old_.empty() ? ::unsetenv(name_) : ::setenv(name_, old_.c_str(), 1); }

 private:
  const char* name_;
  std::string old_;
};

ClusterSpec two_hosts(const std::string& master) {
  return explicit_cluster({.rank = 1, .world_size = 4, .local_rank = 1, .local_world_size = 2,
                           .master_addr = master, .master_port = 29500});
}

// This host's name as the resolver answers it (IPv4), or "" when it does not.
std::string this_host_address() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_INET;
  if (::getaddrinfo(name, nullptr, &hints, &found) != 0 || found == nullptr) return "";
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text, sizeof text);
  ::freeaddrinfo(found);
  return text;
}

TEST(GlooBindAddressTest, OneHostUsesLoopback) {
  EXPECT_EQ(gloo_bind_address(explicit_cluster({.rank = 0, .world_size = 2, .local_world_size = 2,
                                                .master_addr = "10.1.2.3", .master_port = 29500})),
            "127.0.0.1");
  // A master reached over loopback means every worker is here.
  EXPECT_EQ(gloo_bind_address(two_hosts("localhost")), "127.0.0.1");
}

TEST(GlooBindAddressTest, ExplicitSettingsComeFirst) {
  {
    ScopedEnv addr("CHORUS_SOCKET_ADDR", "10.9.8.7");
    EXPECT_EQ(gloo_bind_address(two_hosts("10.1.2.3")), "10.9.8.7");
  }
  ScopedEnv ifname("CHORUS_SOCKET_IFNAME", "eth0");
  EXPECT_EQ(gloo_bind_address(two_hosts("10.1.2.3")), "");  // Gloo binds the interface's address
}

TEST(GlooBindAddressTest, AJobAcrossHostsNeverBindsLoopback) {
  const std::string here = this_host_address();
  if (here.empty() || here.starts_with("127.")) {
    EXPECT_THAT([] { gloo_bind_address(two_hosts("10.1.2.3")); },
                ::testing::ThrowsMessage<ValueError>(HasSubstr("spans hosts, but this host's name")));
    EXPECT_THAT([] { gloo_bind_address(two_hosts("10.1.2.3")); },
                ::testing::ThrowsMessage<ValueError>(HasSubstr("Set CHORUS_SOCKET_IFNAME")));
  } else {
    EXPECT_EQ(gloo_bind_address(two_hosts("10.1.2.3")), here);
  }
}

TEST(GlooOptionsTest, SyncModeSettingsComeFromTheEnvironment) {
  {
    ScopedEnv bytes("CHORUS_GLOO_SYNC_BYTES", "0");
    ScopedEnv poll("CHORUS_GLOO_BUSY_POLL", "1");
    const comm::GlooOptions options = comm::gloo_options_from_env();
    EXPECT_EQ(options.sync_max_bytes, 0);
    EXPECT_TRUE(options.busy_poll);
  }
  ScopedEnv bad("CHORUS_GLOO_SYNC_BYTES", "64k");
  EXPECT_THAT([] { comm::gloo_options_from_env(); },
              ::testing::ThrowsMessage<ValueError>(
                  HasSubstr("CHORUS_GLOO_SYNC_BYTES: expected a non-negative integer, got '64k'")));
}

}  // namespace
}  // namespace chorus::cluster
