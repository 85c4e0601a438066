// ClusterSpec: the workers of a multi-worker job and which one this process is
// (DESIGN.md §3, "Multi-worker"), read from the environment a launcher sets — TF_CONFIG
// (tf.distribute), torchrun's RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, Open MPI's
// OMPI_COMM_WORLD_*, Slurm's SLURM_* — or given explicitly. A plain value; the discovery
// functions only read the environment.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace chorus::cluster {

struct ClusterSpec {
  int rank = 0;        // this worker, 0 .. world_size - 1; rank 0 hosts the rendezvous store
  int world_size = 1;  // workers in the job
  int local_rank = 0;  // this worker among those on its host
  int local_world_size = 1;
  // Where rank 0's rendezvous store listens. Empty / 0 for a single worker.
  std::string master_addr;
  int master_port = 0;
  // "host:port" of every worker in rank order, when the launcher lists them (TF_CONFIG).
  std::vector<std::string> workers;
  // Tells two jobs on one host apart (CHORUS_JOB_ID, TORCHELASTIC_RUN_ID, SLURM_JOB_ID,
  // else derived from the master's address and port).
  std::string job_id;
  // The launcher hosts the rendezvous store (CHORUS_STORE_ON_LAUNCHER=1, set by `chorus
  // launch`), so rank 0 does not: it outlives the workers' restarts.
  bool store_on_launcher = false;
  // What described the cluster: "TF_CONFIG", "torchrun", "Open MPI", "Slurm", "explicit"
  // or "single" (no launcher: one worker).
  std::string source = "single";

  bool is_chief() const { return rank == 0; }
  bool multi_worker() const { return world_size > 1; }
  // "rank 1 of 3 (torchrun; master 10.0.0.1:29500)": for logs and errors.
  std::string to_string() const;
};

// Reads the environment, first match wins: TF_CONFIG; torchrun (RANK and WORLD_SIZE);
// Open MPI (OMPI_COMM_WORLD_RANK/SIZE); Slurm (SLURM_PROCID/NTASKS); else one worker.
// MASTER_ADDR / MASTER_PORT override the master of any source. Throws ValueError naming
// the variable and what is wrong: malformed JSON or fields in TF_CONFIG, a rank outside
// [0, world size), a non-numeric value, a multi-worker job with no master address.
ClusterSpec discover_cluster();

// The same over any variable lookup (returns nullptr for an unset variable): for tests
// and for launchers that build a worker's environment.
using EnvLookup = std::function<const char*(const char* name)>;
ClusterSpec discover_cluster(const EnvLookup& getenv);

// Checks an explicit spec (rank range, master given when multi-worker); fills job_id
// and source ("explicit") when empty. Throws ValueError.
ClusterSpec explicit_cluster(ClusterSpec spec);

}  // namespace chorus::cluster
