// FILE sharding (auto_shard.h): find the pipeline's one source and the batch that makes
// its elements, then rebuild every stage from the source up with the worker's files, its
// batch size and per-worker cache paths. The input pipeline is never modified: stages are
// immutable, and rebuilt ones share no mutable state with it (a cache records anew).
#include "chorus/data/auto_shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "chorus/core/error.h"
#include "chorus/data/dataset_impl.h"

namespace chorus::data {
namespace {

// Appends the sources under `stage`, once per path to them (zip(a, a) reads `a` twice).
void collect_sources(const DatasetImpl& stage, std::vector<const DatasetImpl*>& out) {
  const auto inputs = stage.inputs();
  if (inputs.empty()) out.push_back(&stage);
  for (const DatasetImpl* input : inputs) collect_sources(*input, out);
}

std::optional<Dataset> not_applicable(std::string* why, const std::string& pipeline, const std::string& reason) {
  if (why != nullptr) *why = fmt::format("FILE sharding does not apply to '{}': {}", pipeline, reason);
  return std::nullopt;
}

// Where worker `index` caches what `path` caches: a sibling of `path` (not a directory
// inside it, so a trailing '/' is dropped first).
std::string worker_cache_path(std::string path, int64_t num_workers, int64_t index) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return fmt::format("{}.worker-{}-of-{}", path, index, num_workers);
}

}  // namespace

std::string_view auto_shard_policy_name(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::kAuto:
      return "AUTO";
    case AutoShardPolicy::kFile:
      return "FILE";
    case AutoShardPolicy::kData:
      return "DATA";
    case AutoShardPolicy::kOff:
      return "OFF";
  }
  return "?";
}

namespace {

// The batch whose outputs are the dataset's elements (`chain`: its stages, output first):
// the first one from the output, unless an unbatch() comes first (then the elements are
// rows, not global batches). nullptr, with the reason, when there is none.
const DatasetImpl* global_batch_stage(const std::vector<const DatasetImpl*>& chain, std::string& reason) {
  for (const DatasetImpl* stage : chain) {
    if (stage->batch_size() > 0) return stage;
    if (stage->name() == "unbatch") {
      reason = "unbatch() follows its last batch, so its elements are not global batches";
      return nullptr;
    }
  }
  reason = "no batch() or padded_batch() follows the source, so the global batch is unknown";
  return nullptr;
}

}  // namespace

std::optional<Dataset> shard_by_file(const Dataset& dataset, int64_t num_workers, int64_t index, std::string* why) {
  if (num_workers < 1) {
    throw_error<ValueError>("shard_by_file: expected num_workers >= 1. Received: num_workers={}", num_workers);
  }
  if (index < 0 || index >= num_workers) {
    throw_error<ValueError>("shard_by_file: expected 0 <= index < num_workers. Received: index={}, num_workers={}",
                            index, num_workers);
  }
  const DatasetImpl& output = dataset.impl();
  const std::string pipeline = output.describe();

  std::vector<const DatasetImpl*> sources;
  collect_sources(output, sources);
  if (std::none_of(sources.begin(), sources.end(), [](const DatasetImpl* s) { return !s->files().empty(); })) {
    return not_applicable(why, pipeline, "no stage reads files (it needs a source such as text_line_dataset)");
  }
  if (sources.size() > 1) {
    return not_applicable(
        why, pipeline,
        fmt::format("it has {} sources, and sharding the files of one would change which elements zip pairs",
                    sources.size()));
  }
  const std::vector<std::string> files = sources[0]->files();
  if (static_cast<int64_t>(files.size()) < num_workers) {
    return not_applicable(why, pipeline,
                          fmt::format("it reads {} files, fewer than the {} workers", files.size(), num_workers));
  }

  // With one source every stage reads one input: the pipeline is a chain.
  std::vector<const DatasetImpl*> chain;  // the output first, the source last
  for (const DatasetImpl* stage = &output;; stage = stage->inputs()[0]) {
    chain.push_back(stage);
    if (stage->inputs().empty()) break;
  }
  std::string no_batch;
  const DatasetImpl* batch = global_batch_stage(chain, no_batch);
  if (batch == nullptr) return not_applicable(why, pipeline, no_batch);
  const int64_t global = batch->batch_size();
  if (global < num_workers) {
    throw_error<ValueError>("FILE sharding: global batch {} is smaller than the {} workers", global, num_workers);
  }
  const int64_t local = global / num_workers + (index < global % num_workers ? 1 : 0);

  std::vector<std::string> mine;
  for (auto k = static_cast<size_t>(index); k < files.size(); k += static_cast<size_t>(num_workers)) {
    mine.push_back(files[k]);
  }
  DatasetPtr rebuilt = chain.back()->with_files(std::move(mine));
  for (auto it = chain.rbegin() + 1; it != chain.rend(); ++it) {
    const DatasetImpl& stage = **it;
    rebuilt = stage.with_inputs({rebuilt});
    if (&stage == batch) rebuilt = rebuilt->with_batch_size(local);
    if (const std::string path = stage.cache_path(); !path.empty()) {
      rebuilt = rebuilt->with_cache_path(worker_cache_path(path, num_workers, index));
    }
  }
  return Dataset(std::move(rebuilt));
}

}  // namespace chorus::data
