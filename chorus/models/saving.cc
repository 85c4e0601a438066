// Model::save_weights / load_weights / save and load_model. A saved model is a
// directory (DESIGN.md §4):
//   config.json                {"class_name", "config", "compile_config"?}
//   model.weights.safetensors  every weight, keyed by its object path ("dense_1/kernel",
//                              object_paths.h); metadata "keys": "object_paths"
//   optimizer.safetensors      the optimizer's iterations and slots (when built), a slot
//                              keyed "optimizer/<its variable's object path>/<slot>"
// Files written before object paths, keyed by Variable::path() (the layers' global
// names) and unmarked, still load (keys_of_file).
//   state.json                 {"format": "chorus.model", "version": 1, "optimizer": bool}
//                              ("optimizer": whether optimizer.safetensors was written;
//                              absent in checkpoints saved before it was recorded)
// Where a weight or an optimizer slot is split over devices or workers, the two
// safetensors files are shard sets instead (sharded_checkpoint.h):
//   model.safetensors.index.json, model-00001-of-0000N.safetensors, ...
//   optimizer.safetensors.index.json, optimizer-00001-of-0000N.safetensors, ...
// Loading maps the files and copies into each variable only the blocks it keeps.
// Loading never runs anything from the files: configs name layer classes that must be
// registered (layers/registry.h).
#include <algorithm>
#include <cassert>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "chorus/core/error.h"
#include "chorus/core/error_context.h"
#include "chorus/io/atomic_file.h"
#include "chorus/io/safetensors.h"
#include "chorus/layers/weight_budget.h"
#include "chorus/models/functional_graph.h"
#include "chorus/models/model.h"
#include "chorus/models/object_paths.h"
#include "chorus/models/sharded_checkpoint.h"
#include "chorus/models/whole_values.h"
#include "chorus/cluster/worker_group.h"
#include "chorus/distribution/distribution.h"
#include "chorus/models/sequential.h"

namespace chorus::models {
namespace fs = std::filesystem;
namespace {

constexpr const char* kWeightsFile = "model.weights.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kStateFile = "state.json";
constexpr const char* kModelFormat = "chorus.model";
constexpr int kModelVersion = 1;  // the state.json version this build writes and reads

std::string describe(const Shape& shape, DType dtype) { return shape.to_string() + " " + std::string(dtype_name(dtype)); }

// The keys `file` uses for variables whose object paths are `object_keys`. This build marks
// what it writes (kKeysMetadata) and keys it by object paths. An unmarked file whose keys
// are exactly the variables' Variable::path()s (`legacy_keys`) was written before object
// paths, and is read by those even where its keys are object paths too (a model whose
// layers were made in another order than it calls them): that is what its writer meant.
const std::vector<std::string>& keys_of_file(const MappedTensors& file, const std::vector<std::string>& object_keys,
                                             const std::vector<std::string>& legacy_keys) {
  const auto marker = file.metadata.find(kKeysMetadata);
  if (marker != file.metadata.end() && marker->second == kObjectPathKeys) return object_keys;
  const std::set<std::string> legacy(legacy_keys.begin(), legacy_keys.end());
  const bool exactly_legacy = legacy.size() == legacy_keys.size() && file.tensors.size() == legacy.size() &&
                              std::all_of(file.tensors.begin(), file.tensors.end(),
                                          [&](const auto& named) { return legacy.contains(named.first); });
  return exactly_legacy ? legacy_keys : object_keys;
}

// Checks that the tensors of `file` are `variables`, keys[i] naming variables[i]'s, or
// throws ValueError naming the first path that differs (the model's first missing or
// mismatched key, else the file's first unexpected one) and listing every difference.
void check_keys(const std::vector<Variable>& variables, const std::vector<std::string>& keys,
                const std::map<std::string, MappedTensors::Place>& by_name, const std::string& what,
                const fs::path& file) {
  assert(variables.size() == keys.size());
  std::vector<std::string> missing, mismatched, unexpected;
  std::string first;
  for (size_t i = 0; i < variables.size(); ++i) {
    const Variable& v = variables[i];
    const auto it = by_name.find(keys[i]);
    const std::string in_model = what + " " + describe(v.whole_shape(), v.dtype());
    if (it == by_name.end()) {
      missing.push_back(keys[i]);
      if (first.empty()) first = fmt::format("'{}' ({}, not in the file)", keys[i], in_model);
    } else if (it->second.entry.shape != v.whole_shape() || it->second.entry.dtype != v.dtype()) {
      const std::string difference =
          fmt::format("file {}, {}", describe(it->second.entry.shape, it->second.entry.dtype), in_model);
      mismatched.push_back(fmt::format("{} ({})", keys[i], difference));
      if (first.empty()) first = fmt::format("'{}' ({})", keys[i], difference);
    }
  }
  const std::set<std::string> known(keys.begin(), keys.end());
  for (const auto& [name, place] : by_name) {
    if (known.contains(name)) continue;
    unexpected.push_back(name);
    if (first.empty()) first = fmt::format("'{}' (in the file, not in {})", name, what);
  }
  if (!first.empty()) {
    auto list = [](const std::vector<std::string>& xs) { return xs.empty() ? std::string("none") : fmt::format("{}", fmt::join(xs, ", ")); };
    throw_error<ValueError>(
        "{}: {} does not match: the first path that differs is {}; missing from the file: {}; unexpected in the file: "
        "{}; mismatched: {}",
        file.string(), what, first, list(missing), list(unexpected), list(mismatched));
  }
}

// Reads `file` into `variables`, whose object paths are `object_keys` (keys_of_file): each
// variable copies only the bytes of the blocks it keeps out of the mapped file.
void load_by_key(const std::vector<Variable>& variables, const std::vector<std::string>& object_keys,
                 const std::string& what, const MappedTensors& file) {
  const std::vector<std::string> legacy_keys = legacy_paths(variables);
  const std::vector<std::string>& keys = keys_of_file(file, object_keys, legacy_keys);
  std::map<std::string, MappedTensors::Place> by_name;
  for (const auto& [name, place] : file.tensors) by_name.emplace(name, place);
  check_keys(variables, keys, by_name, what, file.source);
  for (size_t i = 0; i < variables.size(); ++i) {
    const MappedTensors::Place& place = by_name.at(keys[i]);
    variables[i].assign_whole_bytes(place.file->bytes(place.entry));
    place.file->release(place.entry);
  }
}

// The weights (prefix "model") or optimizer state ("optimizer") in `dir`: a shard set
// where its index is there, else the one file `whole_file`.
MappedTensors map_saved(const fs::path& dir, const std::string& prefix, const char* whole_file) {
  if (fs::exists(dir / shard_index_name(prefix))) return map_shards(dir, prefix);
  return map_tensors(dir / whole_file);
}

// The metadata of a file this build writes: its format, and that it is keyed by object paths.
std::map<std::string, std::string> file_metadata(const std::string& format) {
  return {{"format", format}, {kKeysMetadata, kObjectPathKeys}};
}

nlohmann::json read_json(const fs::path& path) {
  std::string text = io::read_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw_error<IOError>("{}: not valid JSON: {}", path.string(), e.what());
  }
}

// state.json's content.
nlohmann::json saved_state(bool optimizer_saved) {
  return {{"format", kModelFormat}, {"version", kModelVersion}, {"optimizer", optimizer_saved}};
}

// What state.json says about a saved model.
struct SavedState {
  std::optional<bool> optimizer_saved;  // nullopt: not recorded (an older checkpoint)
};

// Reads and checks `dir`/state.json. Throws IOError naming the file and the field.
SavedState read_saved_state(const fs::path& dir) {
  const fs::path path = dir / kStateFile;
  if (!fs::exists(path)) {
    throw_error<IOError>("load_model: {} is missing: {} is not a complete saved model (was the save interrupted?)",
                         path.string(), dir.string());
  }
  const nlohmann::json state = read_json(path);
  const auto field = [&](const char* key) {
    return state.is_object() && state.contains(key) ? state[key] : nlohmann::json();
  };
  if (const nlohmann::json format = field("format"); format != kModelFormat) {
    throw_error<IOError>("load_model: {}: expected \"format\": \"{}\", found {}", path.string(), kModelFormat,
                         state.is_object() ? format.dump() : state.dump());
  }
  if (const nlohmann::json version = field("version"); version != kModelVersion) {
    throw_error<IOError>("load_model: {}: version {} is not supported: this build of chorus reads version {}",
                         path.string(), version.dump(), kModelVersion);
  }
  SavedState saved;
  if (const nlohmann::json optimizer = field("optimizer"); optimizer.is_boolean()) {
    saved.optimizer_saved = optimizer.get<bool>();
  } else if (!optimizer.is_null()) {
    throw_error<IOError>("load_model: {}: \"optimizer\": expected true or false, found {}", path.string(),
                         optimizer.dump());
  }
  return saved;
}

void write_json(const fs::path& path, const nlohmann::json& json) { io::write_file_atomically(path, json.dump(2) + "\n"); }

cluster::WorkerGroup* workers_of(const std::shared_ptr<distribution::Distribution>& distribution) {
  return distribution ? distribution->workers().get() : nullptr;
}

// In a multi-worker job only rank 0 writes; every rank returns once the files are
// complete, so any of them may read them back (DESIGN.md §3).
void write_on_chief(const std::shared_ptr<distribution::Distribution>& distribution, const std::function<void()>& write) {
  cluster::WorkerGroup* group = workers_of(distribution);
  if (group == nullptr) {
    write();
    return;
  }
  group->on_chief_then_barrier(write);
}

}  // namespace

void Model::save_weights(const fs::path& path) const {
  if (!built()) throw_error<ValueError>("{}: save_weights on a model that was never built", name());
  std::map<std::string, std::string> metadata = file_metadata("chorus.weights");
  metadata["model"] = name();
  cluster::WorkerGroup* group = workers_of(distribution_);
  if (split_anywhere(weights())) {
    save_in_shards(
        path, group,
        [&](const fs::path& staging) {
          write_shards(staging, "model", weights(), weight_object_paths(*this), metadata, group);
        },
        [](const fs::path&) {});
    return;
  }
  const io::NamedTensors tensors = with_keys(whole_values(weights(), group), weight_object_paths(*this));
  write_on_chief(distribution_, [&] { io::save_safetensors(path, tensors, metadata); });
}

void Model::load_weights(const fs::path& path) {
  if (!built()) {
    throw_error<ValueError>("{}: load_weights needs a built model: call it on a batch (or build it) first", name());
  }
  const MappedTensors file = fs::is_directory(path) ? map_saved(path, "model", kWeightsFile) : map_tensors(path);
  load_by_key(weights(), weight_object_paths(*this), "model '" + name() + "'", file);
}

void Model::load_optimizer_state(const fs::path& path) {
  if (!optimizer().built()) optimizer().build(trainable_weights());
  const MappedTensors file = fs::is_directory(path) ? map_saved(path, "optimizer", kOptimizerFile) : map_tensors(path);
  load_by_key(optimizer().variables(), optimizer_object_paths(optimizer(), *this),
              "optimizer '" + optimizer().name() + "'", file);
}

void Model::save(const fs::path& path) const {
  if (!built()) throw_error<ValueError>("{}: save on a model that was never built", name());
  const bool with_optimizer = compiled() && optimizer_->built();
  cluster::WorkerGroup* group = workers_of(distribution_);
  if (split_anywhere(weights()) || (with_optimizer && split_anywhere(optimizer_->variables()))) {
    save_in_shards(
        path, group,
        [&](const fs::path& staging) {
          write_shards(staging, "model", weights(), weight_object_paths(*this), file_metadata("chorus.weights"), group);
          if (with_optimizer) {
            write_shards(staging, "optimizer", optimizer_->variables(), optimizer_object_paths(*optimizer_, *this),
                         file_metadata("chorus.optimizer"), group);
          }
        },
        [&](const fs::path& staging) { write_model_description(staging); });
    return;
  }
  const io::NamedTensors weights_tensors = with_keys(whole_values(weights(), group), weight_object_paths(*this));
  const io::NamedTensors optimizer_tensors =
      with_optimizer
          ? with_keys(whole_values(optimizer_->variables(), group), optimizer_object_paths(*optimizer_, *this))
          : io::NamedTensors();
  write_on_chief(distribution_, [&] {
    io::AtomicDirectory dir(path);
    io::save_safetensors(dir.staging() / kWeightsFile, weights_tensors, file_metadata("chorus.weights"));
    if (with_optimizer) {
      io::save_safetensors(dir.staging() / kOptimizerFile, optimizer_tensors, file_metadata("chorus.optimizer"));
    }
    write_model_description(dir.staging());
    dir.commit();
  });
}

void Model::write_model_description(const fs::path& dir) const {
  nlohmann::json config = {{"class_name", class_name()}, {"config", get_config()}};
  if (compiled()) {
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& m : compiled_metrics_) metrics.push_back(m->to_config());
    config["compile_config"] = {{"optimizer", optimizer_->to_config()},
                                {"loss", loss_ ? loss_->to_config() : nlohmann::json()},
                                {"metrics", metrics},
                                {"jit_compile", compile_options_.jit_compile}};
  }
  write_json(dir / "config.json", config);
  write_json(dir / kStateFile, saved_state(compiled() && optimizer_->built()));
}

namespace {

// The model that config.json's "class_name" and "config" describe, uncompiled. `file`
// prefixes errors.
std::unique_ptr<Model> model_from_config(const nlohmann::json& config, const fs::path& file) {
  if (!config.is_object()) {
    throw_error<IOError>("load_model: {}: expected an object with \"class_name\" and \"config\", found {}",
                         file.string(), config.type_name());
  }
  const nlohmann::json class_name = config.contains("class_name") ? config["class_name"] : nlohmann::json();
  if (!class_name.is_string()) {
    throw_error<IOError>("load_model: {}: class_name: expected a string, found {}", file.string(), class_name.dump());
  }
  if (class_name != "Functional" && class_name != "Sequential") {
    throw_error<ValueError>(
        "load_model: {} holds a model of class '{}', which cannot be rebuilt from its config; build it in code "
        "and call load_weights",
        file.parent_path().string(), class_name.get<std::string>());
  }
  const nlohmann::json model_config = config.contains("config") ? config["config"] : nlohmann::json();
  return with_error_context("load_model: " + file.string(), [&]() -> std::unique_ptr<Model> {
    if (class_name == "Sequential") return Sequential::from_config(model_config);
    auto [inputs, outputs] = FunctionalGraph::symbolic_from_config(model_config);
    const auto name = model_config.find("name");
    if (name == model_config.end() || !name->is_string()) {
      throw_error<ValueError>("config.name: expected a string, found {}",
                              name == model_config.end() ? std::string("nothing") : name->dump());
    }
    return std::make_unique<Model>(inputs, outputs, name->get<std::string>());
  });
}

// Compiles `model` as config.json's "compile_config" says. `file` prefixes errors.
void compile_from_config(Model& model, const nlohmann::json& cc, const fs::path& file) {
  with_error_context("load_model: " + file.string(), [&] {
    if (!cc.is_object()) throw_error<ValueError>("compile_config: expected an object, found {}", cc.type_name());
    if (!cc.contains("optimizer")) throw_error<ValueError>("compile_config.optimizer: missing");
    CompileOptions options;
    options.optimizer = with_error_context("compile_config.optimizer",
                                           [&] { return optimizers::Optimizer::from_config(cc["optimizer"]); });
    if (cc.contains("loss") && !cc["loss"].is_null()) {
      options.loss = with_error_context("compile_config.loss", [&] { return losses::Loss::from_config(cc["loss"]); });
    }
    const nlohmann::json metrics = cc.contains("metrics") ? cc["metrics"] : nlohmann::json::array();
    if (!metrics.is_array()) throw_error<ValueError>("compile_config.metrics: expected a list, found {}", metrics.dump());
    for (size_t i = 0; i < metrics.size(); ++i) {
      options.metrics.push_back(with_error_context(fmt::format("compile_config.metrics[{}]", i),
                                                   [&] { return metrics::Metric::from_config(metrics[i]); }));
    }
    if (cc.contains("jit_compile")) {
      if (!cc["jit_compile"].is_boolean()) {
        throw_error<ValueError>("compile_config.jit_compile: expected true or false, found {}", cc["jit_compile"].dump());
      }
      options.jit_compile = cc["jit_compile"].get<bool>();
    }
    model.compile(std::move(options));
  });
}

// Restores the optimizer's iterations and slots from `dir`'s optimizer.safetensors or
// optimizer shards, which must exist when state.json says they were written.
void load_saved_optimizer_state(Model& model, const fs::path& dir, const SavedState& state) {
  const fs::path file = dir / kOptimizerFile;
  const bool exists = fs::exists(file) || fs::exists(dir / shard_index_name("optimizer"));
  if (state.optimizer_saved == true && !exists) {
    throw_error<IOError>(
        "load_model: {} is missing, but {} says the optimizer's state was saved; load with "
        "LoadModelOptions{{.compile = false}} to restore the weights alone",
        file.string(), (dir / kStateFile).string());
  }
  if (!exists || state.optimizer_saved == false) return;
  model.load_optimizer_state(dir);
}

// A saved model directory that passed load_model's checks up to its weights: state.json
// and config.json read and checked, the weights file present, the model rebuilt.
struct CheckedModel {
  SavedState state;
  nlohmann::json config;
  std::unique_ptr<Model> model;  // uncompiled, weights not yet loaded
};

// The checks load_model and check_saved_model share. Throws naming the invalid file.
CheckedModel check_model_files(const fs::path& path) {
  if (!fs::is_directory(path)) throw_error<IOError>("load_model: {} is not a saved model directory", path.string());
  CheckedModel checked{.state = read_saved_state(path)};
  const fs::path config_file = path / "config.json";
  checked.config = read_json(config_file);
  const fs::path weights_file = path / kWeightsFile;
  if (!fs::is_regular_file(weights_file) && !fs::exists(path / shard_index_name("model"))) {
    throw_error<IOError>("load_model: {} is missing: {} is not a complete saved model", weights_file.string(),
                         path.string());
  }
  {
    // The files hold every weight, so a config that asks for more bytes is refused
    // before they are allocated. Mapping them checks every shard's header.
    const MappedTensors weights = map_saved(path, "model", kWeightsFile);
    int64_t bytes = 0;
    for (const auto& file : weights.files) bytes += static_cast<int64_t>(fs::file_size(file->path()));
    layers::WeightBudget budget(bytes, fmt::format("{} holds {} bytes", weights.source.string(), bytes));
    checked.model = model_from_config(checked.config, config_file);
  }
  if (!checked.model->built()) {
    throw_error<ValueError>("load_model: {}: the model has no input shape, so its weights cannot be created", path.string());
  }
  return checked;
}

}  // namespace

void check_saved_model(const fs::path& path) {
  CheckedModel checked = check_model_files(path);
  if (checked.config.contains("compile_config")) {
    compile_from_config(*checked.model, checked.config["compile_config"], path / "config.json");
  }
}

std::unique_ptr<Model> load_model(const fs::path& path, const LoadModelOptions& options) {
  CheckedModel checked = check_model_files(path);
  std::unique_ptr<Model> model = std::move(checked.model);
  const nlohmann::json& config = checked.config;
  model->load_weights(path);
  if (options.compile && config.contains("compile_config")) {
    compile_from_config(*model, config["compile_config"], path / "config.json");
    load_saved_optimizer_state(*model, path, checked.state);
  }
  return model;
}

}  // namespace chorus::models
