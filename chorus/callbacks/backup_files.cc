// BackupAndRestore's backup directories. fit_state.json is written last into the staging
// directory and lists the SHA-256 of every other file, so a backup whose files were
// damaged after the atomic commit (a disk error, a truncating copy) is detected. Under a
// sharded layout the weights and optimizer state are shard sets (sharded_checkpoint.h)
// under the same digests.
#include "chorus/callbacks/backup_files.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chorus/data/sha256.h"
#include "chorus/io/atomic_file.h"
#include "chorus/io/safetensors.h"
#include "chorus/models/model.h"
#include "chorus/models/object_paths.h"
#include "chorus/models/sharded_checkpoint.h"
#include "chorus/models/whole_values.h"

namespace chorus::callbacks {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kStateFile = "fit_state.json";
constexpr const char* kWeightsFile = "model.weights.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kCallbacksFile = "callbacks.safetensors";
constexpr std::string_view kPrefix = "backup-";

std::string describe(const std::string& path, const Shape& shape, DType dtype) {
  return fmt::format("{} {} {}", path, shape.to_string(), dtype_name(dtype));
}

// What identifies the model a backup belongs to: each weight's key (`keys`: object paths,
// or Variable::path()s as backups written before object paths have them), shape and dtype.
std::vector<std::string> signature(const models::Model& model, const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  const std::vector<autograd::Variable> weights = model.weights();
  for (size_t i = 0; i < weights.size(); ++i) {
    out.push_back(describe(keys[i], weights[i].whole_shape(), weights[i].dtype()));
  }
  return out;
}

json state_to_json(const models::FitState& state) {
  json callbacks = json::array();
  for (const models::CallbackState& c : state.callbacks) {
    callbacks.push_back({{"class_name", c.class_name}, {"values", c.values}, {"tensors", c.tensors.size()}});
  }
  json dropout = json::array();
  for (const auto& [path, calls] : state.dropout_calls) dropout.push_back({path, calls});
  return {{"epoch", state.epoch},
          {"step", state.step},
          {"total_steps", state.total_steps},
          {"pass", state.pass ? json(*state.pass) : json()},
          {"position", state.pass ? state.position.state : json()},
          {"metric_states", state.metric_states},
          {"learning_rate", state.learning_rate ? json(*state.learning_rate) : json()},
          {"dropout_calls", dropout},
          {"callbacks", callbacks}};
}

// `callback_tensors`: callbacks.safetensors, "callbacks/<i>/<k>" for tensor k of callback i.
models::FitState state_from_json(const json& j, const std::map<std::string, Tensor>& callback_tensors) {
  models::FitState state;
  state.epoch = j.at("epoch").get<int>();
  state.step = j.at("step").get<int64_t>();
  state.total_steps = j.at("total_steps").get<int64_t>();
  if (!j.at("pass").is_null()) {
    state.pass = j["pass"].get<int64_t>();
    state.position.state = j.at("position");
  }
  state.metric_states = j.at("metric_states").get<std::vector<double>>();
  if (!j.at("learning_rate").is_null()) state.learning_rate = j["learning_rate"].get<double>();
  for (const json& d : j.at("dropout_calls")) state.dropout_calls.emplace_back(d.at(0).get<std::string>(), d.at(1).get<uint64_t>());
  for (size_t i = 0; i < j.at("callbacks").size(); ++i) {
    const json& c = j["callbacks"][i];
    models::CallbackState callback{c.at("class_name").get<std::string>(), c.at("values"), {}};
    for (size_t k = 0; k < c.at("tensors").get<size_t>(); ++k) {
      callback.tensors.push_back(callback_tensors.at(fmt::format("callbacks/{}/{}", i, k)));
    }
    state.callbacks.push_back(std::move(callback));
  }
  return state;
}

// Throws ValueError naming the first difference between the backup's signature and the model's.
// A backup written before object paths lists the weights' global paths: it matches when
// they are exactly this model's (its files then load by those keys too).
void check_signature(const fs::path& dir, const json& saved, const models::Model& model) {
  const auto want = saved.get<std::vector<std::string>>();
  if (want == signature(model, models::legacy_paths(model.weights()))) return;
  const std::vector<std::string> have = signature(model, models::weight_object_paths(model));
  for (size_t i = 0; i < std::max(have.size(), want.size()); ++i) {
    const std::string in_backup = i < want.size() ? want[i] : "nothing", in_model = i < have.size() ? have[i] : "nothing";
    if (in_backup != in_model) {
      throw_error<ValueError>(
          "BackupAndRestore: {} was written by another model: its weight {} is {}, but model '{}' has {} ({} weights in "
          "the backup, {} in the model)",
          dir.string(), i, in_backup, model.name(), in_model, want.size(), have.size());
    }
  }
}

void write_plain_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw_error<IOError>("{}: cannot write the backup file", path.string());
}

}  // namespace

std::string backup_name(int64_t steps) { return fmt::format("{}{:012d}", kPrefix, steps); }

BackupSnapshot take_backup_snapshot(const models::Model& model, models::FitState state,
                                    cluster::WorkerGroup* workers) {
  // Copies: training goes on updating the variables in place while the backup is written.
  // Keyed by object paths, so that another instance of the model's class resumes from it.
  const std::vector<std::string> keys = models::weight_object_paths(model);
  return {model.name(), signature(model, keys),
          models::with_keys(models::whole_values(model.weights(), workers, /*copy=*/true), keys),
          models::with_keys(models::whole_values(model.optimizer().variables(), workers, /*copy=*/true),
                            models::optimizer_object_paths(model.optimizer(), model)),
          std::move(state)};
}

namespace {

std::map<std::string, std::string> file_metadata(const char* format) {
  return {{"format", format}, {models::kKeysMetadata, models::kObjectPathKeys}};
}

// Writes callbacks.safetensors and, last, fit_state.json into the staging directory
// `out`; `files` holds the SHA-256 of the files already there.
void write_state_files(const fs::path& out, const std::string& model_name, const std::vector<std::string>& signature,
                       const models::FitState& state, json files) {
  io::NamedTensors callback_tensors;
  for (size_t i = 0; i < state.callbacks.size(); ++i) {
    for (size_t k = 0; k < state.callbacks[i].tensors.size(); ++k) {
      callback_tensors.emplace_back(fmt::format("callbacks/{}/{}", i, k), state.callbacks[i].tensors[k]);
    }
  }
  const std::string bytes = io::safetensors_bytes(out / kCallbacksFile, callback_tensors, file_metadata("chorus.callbacks"));
  write_plain_file(out / kCallbacksFile, bytes);
  files[kCallbacksFile] = data::sha256_hex(bytes);
  json document = {{"format", "chorus.backup"},
                   {"version", kBackupFormatVersion},
                   {"model", {{"name", model_name}, {"weights", signature}}},
                   {"files", files},
                   {"fit_state", state_to_json(state)}};
  write_plain_file(out / kStateFile, document.dump(1) + "\n");
}

}  // namespace

void write_backup(const fs::path& dir, const BackupSnapshot& snapshot) {
  io::AtomicDirectory staging(dir);
  const fs::path& out = staging.staging();
  // Plain writes: the staging directory is flushed and swapped in as a whole by commit().
  json files = json::object();
  auto write = [&](const char* file, const io::NamedTensors& tensors, const char* format) {
    const std::string bytes = io::safetensors_bytes(out / file, tensors, file_metadata(format));
    write_plain_file(out / file, bytes);
    files[file] = data::sha256_hex(bytes);
  };
  write(kWeightsFile, snapshot.weights, "chorus.weights");
  write(kOptimizerFile, snapshot.optimizer, "chorus.optimizer");
  write_state_files(out, snapshot.model_name, snapshot.signature, snapshot.state, files);
  staging.commit();
}

bool backs_up_in_shards(const models::Model& model) {
  return models::split_anywhere(model.weights()) || models::split_anywhere(model.optimizer().variables());
}

void write_backup_in_shards(const fs::path& dir, const models::Model& model, const models::FitState& state,
                            cluster::WorkerGroup* workers) {
  const std::vector<std::string> keys = models::weight_object_paths(model);
  models::save_in_shards(
      dir, workers,
      [&](const fs::path& staging) {
        models::write_shards(staging, "model", model.weights(), keys, file_metadata("chorus.weights"), workers);
        models::write_shards(staging, "optimizer", model.optimizer().variables(),
                             models::optimizer_object_paths(model.optimizer(), model), file_metadata("chorus.optimizer"),
                             workers);
      },
      [&](const fs::path& staging) {
        // Every rank's shards are complete here; rank 0 reads each back for its digest.
        json files = json::object();
        for (const auto& entry : fs::directory_iterator(staging)) {
          files[entry.path().filename().string()] = data::sha256_file_hex(entry.path().string());
        }
        write_state_files(staging, model.name(), signature(model, keys), state, files);
      });
}

std::vector<std::pair<int64_t, fs::path>> list_backups(const fs::path& backup_dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  std::error_code ec;
  for (auto it = fs::directory_iterator(backup_dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int64_t steps = -1;
    const char* digits = name.data() + kPrefix.size();
    if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) continue;
    auto [end, err] = std::from_chars(digits, name.data() + name.size(), steps);
    if (err == std::errc() && end == name.data() + name.size() && steps >= 0) out.emplace_back(steps, it->path());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

models::FitState read_backup(const fs::path& dir, models::Model& model) {
  const fs::path state_file = dir / kStateFile;
  json document;
  try {
    document = json::parse(io::read_file(state_file));
  } catch (const std::exception& e) {  // IOError (missing, unreadable) or a JSON parse error (truncated)
    throw_error<DamagedBackupError>("{}: cannot read the backup's state: {}", state_file.string(), e.what());
  }
  try {
    if (document.at("format") != "chorus.backup") {
      throw_error<DamagedBackupError>("{}: not a chorus backup (format {})", state_file.string(), document["format"].dump());
    }
    const int version = document.at("version").get<int>();
    if (version > kBackupFormatVersion) {
      throw_error<ValueError>("{}: backup format version {} was written by a newer chorus; this build reads up to {}",
                              state_file.string(), version, kBackupFormatVersion);
    }
    for (const auto& [file, digest] : document.at("files").items()) {
      const fs::path path = dir / file;
      if (!fs::exists(path)) throw_error<DamagedBackupError>("{}: missing from the backup", path.string());
      if (data::sha256_file_hex(path.string()) != digest.get<std::string>()) {
        throw_error<DamagedBackupError>("{}: its SHA-256 differs from the one in {}: the file is damaged", path.string(),
                                        state_file.string());
      }
    }
    check_signature(dir, document.at("model").at("weights"), model);
    std::map<std::string, Tensor> callback_tensors;
    for (auto& [name, tensor] : io::load_safetensors(dir / kCallbacksFile).tensors) callback_tensors.emplace(name, tensor);
    models::FitState state = state_from_json(document.at("fit_state"), callback_tensors);
    model.load_weights(dir);  // model.weights.safetensors, or the model's shards
    model.load_optimizer_state(dir);
    return state;
  } catch (const nlohmann::json::exception& e) {
    throw_error<DamagedBackupError>("{}: malformed backup state: {}", state_file.string(), e.what());
  } catch (const std::out_of_range& e) {
    throw_error<DamagedBackupError>("{}: a callback tensor is missing from {}: {}", state_file.string(), kCallbacksFile,
                                    e.what());
  }
}

}  // namespace chorus::callbacks
