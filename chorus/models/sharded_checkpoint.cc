#include "chorus/models/sharded_checkpoint.h"

#include <algorithm>
#include <exception>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chorus/cluster/worker_group.h"
#include "chorus/core/error.h"
#include "chorus/io/atomic_file.h"
#include "chorus/io/safetensors_writer.h"
#include "chorus/models/whole_values.h"

namespace chorus::models {
namespace fs = std::filesystem;
namespace {

uint64_t whole_bytes(const autograd::Variable& v) {
  return static_cast<uint64_t>(v.whole_shape().numel()) * dtype_size(v.stored_dtype());
}

// Which file holds each variable: as many files as ranks (fewer where there are fewer
// variables), the largest variables first, each into the file with the fewest bytes so
// far, so that the ranks write about as much each. Every rank computes the same plan.
struct ShardPlan {
  int files = 1;
  std::vector<int> file_of;
};

ShardPlan plan_shards(const std::vector<autograd::Variable>& variables, int ranks) {
  ShardPlan plan;
  plan.files = std::max(1, std::min(ranks, static_cast<int>(variables.size())));
  plan.file_of.assign(variables.size(), 0);
  std::vector<size_t> order(variables.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return whole_bytes(variables[a]) > whole_bytes(variables[b]); });
  std::vector<uint64_t> load(static_cast<size_t>(plan.files), 0);
  for (size_t i : order) {
    const auto lightest = std::min_element(load.begin(), load.end()) - load.begin();
    plan.file_of[i] = static_cast<int>(lightest);
    load[static_cast<size_t>(lightest)] += whole_bytes(variables[i]);
  }
  return plan;
}

std::string shard_file_name(const std::string& prefix, int file, int files) {
  return fmt::format("{}-{:05d}-of-{:05d}.safetensors", prefix, file + 1, files);
}

void write_index(const fs::path& dir, const std::string& prefix, const ShardPlan& plan,
                 const std::vector<autograd::Variable>& variables, const std::vector<std::string>& keys,
                 const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json index;
  uint64_t total = 0;
  for (const auto& v : variables) total += whole_bytes(v);
  index["metadata"] = nlohmann::ordered_json::object();
  index["metadata"]["total_size"] = total;
  for (const auto& [key, value] : metadata) index["metadata"][key] = value;
  index["weight_map"] = nlohmann::ordered_json::object();
  for (size_t i = 0; i < variables.size(); ++i) {
    index["weight_map"][keys[i]] = shard_file_name(prefix, plan.file_of[i], plan.files);
  }
  io::write_file_atomically(dir / shard_index_name(prefix), index.dump(2) + "\n");
}

// Every rank learns whether every rank wrote its part; a rank that failed rethrows its
// own error, the others name it.
void agree(cluster::WorkerGroup* group, const std::exception_ptr& failure, const fs::path& dir) {
  if (group != nullptr && group->size() > 1) {
    uint8_t mine = failure ? 1 : 0;
    std::vector<uint8_t> all(static_cast<size_t>(group->size()));
    group->communicator().all_gather(std::span(&mine, 1), std::span(all));
    if (!failure) {
      const auto failed = std::find(all.begin(), all.end(), 1);
      if (failed != all.end()) {
        throw_error<IOError>("saving {}: rank {} could not write its shard file (its own error says why)", dir.string(),
                             failed - all.begin());
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

bool split_anywhere(const std::vector<autograd::Variable>& variables) {
  return std::any_of(variables.begin(), variables.end(), [](const autograd::Variable& v) {
    return v.row_shard().has_value() || v.held_blocks().size() > 1;
  });
}

std::string shard_index_name(const std::string& prefix) { return prefix + ".safetensors.index.json"; }

void write_shards(const fs::path& dir, const std::string& prefix, const std::vector<autograd::Variable>& variables,
                  const std::vector<std::string>& keys, const std::map<std::string, std::string>& metadata,
                  cluster::WorkerGroup* group) {
  const int rank = group != nullptr ? group->rank() : 0;
  const ShardPlan plan = plan_shards(variables, group != nullptr ? group->size() : 1);
  const std::vector<std::vector<bool>> added = blocks_to_add(variables, group);
  // A rank whose file fails goes on joining the gathers (the others wait for it), writing
  // nothing, and tells them at the end.
  std::exception_ptr failure;
  std::unique_ptr<io::SafetensorsWriter> writer;
  const auto attempt = [&](const auto& step) {
    if (failure) return;
    try {
      step();
    } catch (...) {
      failure = std::current_exception();
    }
  };
  if (rank < plan.files) {
    attempt([&] {
      std::vector<io::TensorEntry> entries;
      for (size_t i = 0; i < variables.size(); ++i) {
        if (plan.file_of[i] != rank) continue;
        entries.push_back({keys[i], variables[i].stored_dtype(), variables[i].whole_shape()});
      }
      writer = std::make_unique<io::SafetensorsWriter>(dir / shard_file_name(prefix, rank, plan.files),
                                                       std::move(entries), metadata);
    });
  }
  for (size_t i = 0; i < variables.size(); ++i) {
    const bool mine = plan.file_of[i] == rank;
    if (!mine && !gathered_over_workers(variables[i], added[i])) continue;
    const Tensor whole = whole_value(variables[i], added[i], group, WholeCopy::kFresh);
    if (mine) attempt([&] { writer->write(whole); });
  }
  if (writer != nullptr) attempt([&] { writer->close(); });
  if (rank == 0) attempt([&] { write_index(dir, prefix, plan, variables, keys, metadata); });
  agree(group, failure, dir);
}

void save_in_shards(const fs::path& path, cluster::WorkerGroup* group,
                    const std::function<void(const fs::path& staging)>& write_parts,
                    const std::function<void(const fs::path& staging)>& finish) {
  std::unique_ptr<io::AtomicDirectory> dir;
  std::string staging;
  if (group == nullptr || group->rank() == 0) {
    dir = std::make_unique<io::AtomicDirectory>(path);
    staging = dir->staging().string();
  }
  if (group != nullptr && group->size() > 1) staging = group->chief_bytes(staging);
  write_parts(staging);
  const auto commit = [&] {
    finish(staging);
    dir->commit();
  };
  if (group == nullptr) {
    commit();
  } else {
    group->on_chief_then_barrier(commit);
  }
}

MappedTensors map_tensors(const fs::path& file) {
  MappedTensors out{.source = file};
  auto mapped = std::make_unique<io::MappedSafetensors>(file);
  out.metadata = mapped->header().metadata;
  for (const io::TensorEntry& entry : mapped->header().tensors) {
    out.tensors.push_back({entry.name, {mapped.get(), entry}});
  }
  out.files.push_back(std::move(mapped));
  return out;
}

namespace {

// The index's {file name: the tensors it says are in that file}. Throws IOError naming it.
std::map<std::string, std::set<std::string>> read_weight_map(const fs::path& index_path,
                                                             std::map<std::string, std::string>& metadata) {
  nlohmann::json index;
  try {
    index = nlohmann::json::parse(io::read_file(index_path));
  } catch (const nlohmann::json::exception& e) {
    throw_error<IOError>("{}: not valid JSON: {}", index_path.string(), e.what());
  }
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
    throw_error<IOError>("{}: expected an object with \"weight_map\": {{tensor name: file name}}", index_path.string());
  }
  if (index.contains("metadata") && index["metadata"].is_object()) {
    for (const auto& [key, value] : index["metadata"].items()) {
      if (value.is_string()) metadata[key] = value.get<std::string>();
    }
  }
  std::map<std::string, std::set<std::string>> files;
  for (const auto& [name, file] : index["weight_map"].items()) {
    const std::string file_name = file.is_string() ? file.get<std::string>() : std::string();
    const bool plain = !file_name.empty() && file_name != "." && file_name != ".." &&
                       file_name.find('/') == std::string::npos && file_name.find('\0') == std::string::npos;
    if (!plain) {
      throw_error<IOError>("{}: weight_map[\"{}\"] is {}, not the name of a file beside the index",
                           index_path.string(), name, file.dump());
    }
    files[file_name].insert(name);
  }
  return files;
}

}  // namespace

MappedTensors map_shards(const fs::path& dir, const std::string& prefix) {
  const fs::path index_path = dir / shard_index_name(prefix);
  MappedTensors out{.source = index_path};
  for (const auto& [file_name, names] : read_weight_map(index_path, out.metadata)) {
    auto mapped = std::make_unique<io::MappedSafetensors>(dir / file_name);
    std::set<std::string> found;
    for (const io::TensorEntry& entry : mapped->header().tensors) {
      if (!names.contains(entry.name)) {
        throw_error<IOError>("{}: holds tensor '{}', which {} does not list", mapped->path().string(), entry.name,
                             index_path.string());
      }
      found.insert(entry.name);
      out.tensors.push_back({entry.name, {mapped.get(), entry}});
    }
    for (const std::string& name : names) {
      if (!found.contains(name)) {
        throw_error<IOError>("{}: lacks tensor '{}', which {} puts in it", mapped->path().string(), name,
                             index_path.string());
      }
    }
    out.files.push_back(std::move(mapped));
  }
  return out;
}

}  // namespace chorus::models
