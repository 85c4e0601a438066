// Checkpoints in shards (issue 39). Where a variable is split — over a mesh's devices or
// across workers — saving writes Hugging Face's sharded layout, which any safetensors
// reader opens: `<prefix>-0000K-of-0000N.safetensors` files, each tensor whole in exactly
// one of them, and `<prefix>.safetensors.index.json` mapping each tensor to its file.
// File K is written by rank K-1 of the job, which gathers one tensor at a time, so no
// process holds more than its own shards and one whole tensor; loading maps the files
// and each device copies out only the bytes of its own blocks. Free functions; the
// writer is a collective of the job.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chorus/autograd/variable.h"
#include "chorus/io/mapped_safetensors.h"

namespace chorus::cluster {
class WorkerGroup;
}

namespace chorus::models {

// Whether some of `variables` is split over devices or workers: saving them writes shards.
bool split_anywhere(const std::vector<autograd::Variable>& variables);

// "model.safetensors.index.json" for prefix "model".
std::string shard_index_name(const std::string& prefix);

// Writes `variables`, keys[i] naming variables[i]'s tensor, into the directory `dir`
// (every rank's view of one staging directory): rank K writes file K+1, rank 0 also the
// index. Every rank of `group` (nullptr: this process alone) calls it with the same
// variables. Each file's and the index's metadata holds `metadata`. Throws IOError naming
// the file a rank could not write; the other ranks throw IOError saying which rank failed.
void write_shards(const std::filesystem::path& dir, const std::string& prefix,
                  const std::vector<autograd::Variable>& variables, const std::vector<std::string>& keys,
                  const std::map<std::string, std::string>& metadata, cluster::WorkerGroup* group);

// Writes the directory `path` atomically, in shards: rank 0 makes its staging directory,
// every rank runs `write_parts(staging)` (its write_shards calls), then rank 0 runs
// `finish(staging)` (the files it alone writes) and swaps the directory in; every rank
// returns once it has. A crash at any point leaves the previous `path` whole.
void save_in_shards(const std::filesystem::path& path, cluster::WorkerGroup* group,
                    const std::function<void(const std::filesystem::path& staging)>& write_parts,
                    const std::function<void(const std::filesystem::path& staging)>& finish);

// The tensors of a weights file or a shard set, their data mapped, not read.
struct MappedTensors {
  struct Place {
    const io::MappedSafetensors* file;
    io::TensorEntry entry;
  };
  std::filesystem::path source;  // the file, or the index of a shard set: errors name it
  std::map<std::string, std::string> metadata;
  std::vector<std::pair<std::string, Place>> tensors;  // in file order
  std::vector<std::unique_ptr<io::MappedSafetensors>> files;
};

// One safetensors file. Throws IOError naming it when it is missing or invalid.
MappedTensors map_tensors(const std::filesystem::path& file);
// The shard set in `dir` named by `<prefix>.safetensors.index.json`. Throws IOError naming
// the index when it is invalid, and naming a shard file that is missing, truncated, lacks
// a tensor the index puts in it or holds one it does not list.
MappedTensors map_shards(const std::filesystem::path& dir, const std::string& prefix);

}  // namespace chorus::models
