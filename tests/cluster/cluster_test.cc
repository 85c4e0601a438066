// Cluster discovery from each launcher's environment, and the error for each bad value.
#include "chorus/cluster/cluster.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "chorus/core/error.h"
#include "tests/testing/test_names.h"

namespace chorus::cluster {
namespace {

using namespace testing::test_names;

ClusterSpec discover(const std::map<std::string, std::string>& env) {
  return discover_cluster([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(ClusterTest, NoLauncherIsOneWorker) {
  ClusterSpec spec = discover({});
  EXPECT_EQ(spec.rank, 0);
  EXPECT_EQ(spec.world_size, 1);
  EXPECT_EQ(spec.source, "single");
  EXPECT_FALSE(spec.multi_worker());
}

TEST(ClusterTest, TfConfigWorkers) {
  ClusterSpec spec = discover(
      {{"TF_CONFIG", R"({"cluster": {"worker": ["10.0.0.1:12345", "10.0.0.2:23456", "10.0.0.3:34567"]},
                        "task": {"type": "worker", "index": 2}})"}});
  EXPECT_EQ(spec.source, "TF_CONFIG");
  EXPECT_EQ(spec.rank, 2);
  EXPECT_EQ(spec.world_size, 3);
  EXPECT_EQ(spec.master_addr, "10.0.0.1");
  EXPECT_EQ(spec.master_port, 12345);
  EXPECT_EQ(spec.workers[1], "10.0.0.2:23456");
  EXPECT_EQ(spec.job_id, "10.0.0.1:12345");
  EXPECT_EQ(spec.to_string(), "rank 2 of 3 (TF_CONFIG; master 10.0.0.1:12345)");
}

TEST(ClusterTest, TfConfigChiefIsRankZero) {
  const std::string cluster = R"({"cluster": {"chief": ["c:1000"], "worker": ["w0:1001", "w1:1002"]}, )";
  EXPECT_EQ(discover({{"TF_CONFIG", cluster + R"("task": {"type": "chief", "index": 0}})"}}).rank, 0);
  ClusterSpec worker = discover({{"TF_CONFIG", cluster + R"("task": {"type": "worker", "index": 1}})"}});
  EXPECT_EQ(worker.rank, 2);
  EXPECT_EQ(worker.world_size, 3);
  EXPECT_EQ(worker.master_addr, "c");
}

TEST(ClusterTest, TfConfigErrors) {
  EXPECT_THAT([] { discover({{"TF_CONFIG", "{not json"}}); },
              ThrowsMessage<ValueError>(HasSubstr("TF_CONFIG: not valid JSON")));
  EXPECT_THAT([] { discover({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 3}})"}}); },
              ThrowsMessage<ValueError>(HasSubstr("TF_CONFIG: task worker index 3 is out of range: cluster.worker has 1 entries")));
  EXPECT_THAT([] { discover({{"TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps"}})"}}); },
              ThrowsMessage<ValueError>(HasSubstr("task type \"ps\" does not train")));
  EXPECT_THAT([] { discover({{"TF_CONFIG", R"({"cluster": {"worker": ["nohost"]}, "task": {"index": 0}})"}}); },
              ThrowsMessage<ValueError>(HasSubstr("expected \"host:port\", got \"nohost\"")));
}

// Found by fuzz/cluster_fuzzer: a task that is not an object escaped as json's type_error.
TEST(ClusterTest, TfConfigTaskFieldsOfTheWrongType) {
  const std::string cluster = R"({"cluster": {"worker": ["a:1", "b:2"]}, )";
  EXPECT_THAT([&] { discover({{"TF_CONFIG", cluster + R"("task": 5})"}}); },
              ThrowsMessage<ValueError>(HasSubstr("TF_CONFIG: task must be an object, got 5")));
  EXPECT_THAT([&] { discover({{"TF_CONFIG", cluster + R"("task": {"type": 1}})"}}); },
              ThrowsMessage<ValueError>(HasSubstr("TF_CONFIG: task.type must be a string, got 1")));
  // get<int>() wrapped 2^32 + 1 to 1, a valid index.
  EXPECT_THAT([&] { discover({{"TF_CONFIG", cluster + R"("task": {"index": 4294967297}})"}}); },
              ThrowsMessage<ValueError>(HasSubstr("TF_CONFIG: task worker index 4294967297 is out of range: cluster.worker has 2 entries")));
  EXPECT_THAT([&] { discover({{"TF_CONFIG", cluster + R"("task": {"index": 18446744073709551615}})"}}); },
              ThrowsMessage<ValueError>(HasSubstr("index 18446744073709551615 is out of range")));
}

TEST(ClusterTest, PortsAbove65535AreRefused) {
  EXPECT_THAT([] { discover({{"TF_CONFIG", R"({"cluster": {"worker": ["a:70000"]}})"}}); },
              ThrowsMessage<ValueError>(HasSubstr("TF_CONFIG cluster address: port 70000 is out of range [1, 65535] in \"a:70000\"")));
  EXPECT_THAT([] { discover({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "65536"}}); },
              ThrowsMessage<ValueError>(HasSubstr("MASTER_PORT: expected a port from 1 to 65535, got 65536")));
}

TEST(ClusterTest, Torchrun) {
  ClusterSpec spec = discover({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                               {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"}, {"TORCHELASTIC_RUN_ID", "job7"}});
  EXPECT_EQ(spec.source, "torchrun");
  EXPECT_EQ(spec.rank, 1);
  EXPECT_EQ(spec.world_size, 4);
  EXPECT_EQ(spec.local_rank, 1);
  EXPECT_EQ(spec.local_world_size, 2);
  EXPECT_EQ(spec.master_addr, "node0");
  EXPECT_EQ(spec.master_port, 29500);
  EXPECT_EQ(spec.job_id, "job7");
  EXPECT_FALSE(spec.store_on_launcher);  // rank 0 hosts the store
  EXPECT_TRUE(discover({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29500"},
                        {"CHORUS_STORE_ON_LAUNCHER", "1"}})
                  .store_on_launcher);  // chorus launch hosts it
}

TEST(ClusterTest, OpenMpiAndSlurm) {
  ClusterSpec mpi = discover({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"},
                              {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1234"}});
  EXPECT_EQ(mpi.source, "Open MPI");
  EXPECT_EQ(mpi.rank, 2);
  EXPECT_EQ(mpi.world_size, 3);
  ClusterSpec slurm = discover({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}, {"SLURM_LOCALID", "1"},
                                {"SLURM_NTASKS_PER_NODE", "2"}, {"SLURM_JOB_ID", "991"},
                                {"SLURM_JOB_NODELIST", "gpu[07-08,12],cpu1"}, {"MASTER_PORT", "29400"}});
  EXPECT_EQ(slurm.source, "Slurm");
  EXPECT_EQ(slurm.rank, 3);
  EXPECT_EQ(slurm.master_addr, "gpu07");
  EXPECT_EQ(slurm.job_id, "991");
  EXPECT_EQ(discover({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_JOB_NODELIST", "n1,n2"},
                      {"MASTER_PORT", "1"}}).master_addr,
            "n1");
}

TEST(ClusterTest, BadValuesNameTheVariable) {
  EXPECT_THAT([] { discover({{"RANK", "x"}, {"WORLD_SIZE", "2"}}); },
              ThrowsMessage<ValueError>(HasSubstr("RANK: expected an integer >= 0, got \"x\"")));
  EXPECT_THAT([] { discover({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}}); },
              ThrowsMessage<ValueError>(HasSubstr("RANK=2 is out of range for WORLD_SIZE=2")));
  EXPECT_THAT([] { discover({{"RANK", "0"}, {"WORLD_SIZE", "2"}}); },
              ThrowsMessage<ValueError>(HasSubstr("torchrun: a job of 2 workers needs rank 0's address: set MASTER_ADDR and MASTER_PORT")));
  EXPECT_THAT([] { discover({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "0"}}); },
              ThrowsMessage<ValueError>(HasSubstr("MASTER_PORT: expected an integer >= 1, got \"0\"")));
}

TEST(ClusterTest, ExplicitSpec) {
  ClusterSpec spec = explicit_cluster({.rank = 1, .world_size = 2, .master_addr = "127.0.0.1", .master_port = 5000});
  EXPECT_EQ(spec.source, "explicit");
  EXPECT_EQ(spec.job_id, "127.0.0.1:5000");
  EXPECT_THAT([] { explicit_cluster({.rank = 0, .world_size = 2}); },
              ThrowsMessage<ValueError>(HasSubstr("needs master_addr and master_port")));
  EXPECT_THAT([] { explicit_cluster({.rank = 5, .world_size = 2, .master_addr = "a", .master_port = 1}); },
              ThrowsMessage<ValueError>(HasSubstr("rank=5 is out of range for world_size=2")));
}

}  // namespace
}  // namespace chorus::cluster
