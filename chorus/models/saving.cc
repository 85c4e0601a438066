// Model::save_weights / load_weights / save and load_model. A saved model is a
// directory (DESIGN.md §4):
//   config.json                {"class_name", "config", "compile_config"?}
//   model.weights.safetensors  every weight, keyed by its path ("dense_1/kernel")
//   optimizer.safetensors      the optimizer's iterations and slots (when built)
//   state.json                 {"format": "chorus.model", "version": 1}
// Loading never runs anything from the files: configs name layer classes that must be
// registered (layers/registry.h).
#include <fstream>
#include <map>

#include "chorus/core/error.h"
#include "chorus/io/atomic_file.h"
#include "chorus/io/safetensors.h"
#include "chorus/models/functional_graph.h"
#include "chorus/models/model.h"

#include <functional>

#include "chorus/distribute/distribution.h"
#include "chorus/distribute/worker_group.h"
#include "chorus/models/sequential.h"

namespace chorus::models {
namespace fs = std::filesystem;
namespace {

constexpr const char* kWeightsFile = "model.weights.safetensors";
constexpr const char* kOptimizerFile = "optimizer.safetensors";

io::NamedTensors named(const std::vector<Variable>& variables) {
  io::NamedTensors out;
  for (const Variable& v : variables) out.emplace_back(v.path(), v.value());
  return out;
}

std::string describe(const Tensor& t) { return t.shape().to_string() + " " + std::string(dtype_name(t.dtype())); }

// Assigns the tensors of `file` to `variables` by path, or throws ValueError listing
// every missing, unexpected and mismatched variable.
void assign_by_path(const std::vector<Variable>& variables, const io::NamedTensors& tensors, const std::string& what,
                    const fs::path& file) {
  std::map<std::string, Tensor> by_name(tensors.begin(), tensors.end());
  std::vector<std::string> missing, mismatched;
  for (const Variable& v : variables) {
    auto it = by_name.find(v.path());
    if (it == by_name.end()) {
      missing.push_back(v.path());
    } else if (it->second.shape() != v.shape() || it->second.dtype() != v.dtype()) {
      mismatched.push_back(fmt::format("{} (file {}, {} {})", v.path(), describe(it->second), what, describe(v.value())));
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : by_name) {
    bool known = false;
    for (const Variable& v : variables) known = known || v.path() == name;
    if (!known) unexpected.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty()) {
    auto list = [](const std::vector<std::string>& xs) { return xs.empty() ? std::string("none") : fmt::format("{}", fmt::join(xs, ", ")); };
    throw_error<ValueError>("{}: {} does not match: missing from the file: {}; unexpected in the file: {}; mismatched: {}",
                            file.string(), what, list(missing), list(unexpected), list(mismatched));
  }
  for (const Variable& v : variables) v.assign(by_name.at(v.path()));
}

nlohmann::json read_json(const fs::path& path) {
  std::string text = io::read_file(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw_error<IOError>("{}: not valid JSON: {}", path.string(), e.what());
  }
}

void write_json(const fs::path& path, const nlohmann::json& json) { io::write_file_atomically(path, json.dump(2) + "\n"); }

// In a multi-worker job only rank 0 writes; every rank returns once the files are
// complete, so any of them may read them back (DESIGN.md §3).
void write_on_chief(const std::shared_ptr<distribution::Distribution>& distribution, const std::function<void()>& write) {
  const auto& group = distribution ? distribution->workers() : nullptr;
  if (group == nullptr) {
    write();
    return;
  }
  group->on_chief_then_barrier(write);
}

}  // namespace

void Model::save_weights(const fs::path& path) const {
  if (!built()) throw_error<ValueError>("{}: save_weights on a model that was never built", name());
  write_on_chief(distribution_, [&] {
    io::save_safetensors(path, named(weights()), {{"format", "chorus.weights"}, {"model", name()}});
  });
}

void Model::load_weights(const fs::path& path) {
  fs::path file = fs::is_directory(path) ? path / kWeightsFile : path;
  if (!built()) {
    throw_error<ValueError>("{}: load_weights needs a built model: call it on a batch (or build it) first", name());
  }
  assign_by_path(weights(), io::load_safetensors(file).tensors, "model '" + name() + "'", file);
}

void Model::load_optimizer_state(const fs::path& path) {
  if (!optimizer().built()) optimizer().build(trainable_weights());
  assign_by_path(optimizer().variables(), io::load_safetensors(path).tensors, "optimizer '" + optimizer().name() + "'",
                 path);
}

void Model::save(const fs::path& path) const {
  if (!built()) throw_error<ValueError>("{}: save on a model that was never built", name());
  write_on_chief(distribution_, [&] { save_files(path); });
}

void Model::save_files(const fs::path& path) const {
  io::AtomicDirectory dir(path);
  nlohmann::json config = {{"class_name", class_name()}, {"config", get_config()}};
  if (compiled()) {
    nlohmann::json metrics = nlohmann::json::array();
    for (const auto& m : compiled_metrics_) metrics.push_back(m->to_config());
    config["compile_config"] = {{"optimizer", optimizer_->to_config()},
                                {"loss", loss_ ? loss_->to_config() : nlohmann::json()},
                                {"metrics", metrics}};
  }
  write_json(dir.staging() / "config.json", config);
  io::save_safetensors(dir.staging() / kWeightsFile, named(weights()), {{"format", "chorus.weights"}});
  if (compiled() && optimizer_->built()) {
    io::save_safetensors(dir.staging() / kOptimizerFile, named(optimizer_->variables()), {{"format", "chorus.optimizer"}});
  }
  write_json(dir.staging() / "state.json", {{"format", "chorus.model"}, {"version", 1}});
  dir.commit();
}

std::unique_ptr<Model> load_model(const fs::path& path) {
  if (!fs::is_directory(path)) throw_error<IOError>("load_model: {} is not a saved model directory", path.string());
  nlohmann::json config = read_json(path / "config.json");
  std::string class_name = config.value("class_name", "");
  std::unique_ptr<Model> model;
  try {
    if (class_name == "Functional") {
      auto [inputs, outputs] = FunctionalGraph::symbolic_from_config(config.at("config"));
      model = std::make_unique<Model>(inputs, outputs, config.at("config").at("name").get<std::string>());
    } else if (class_name == "Sequential") {
      model = Sequential::from_config(config.at("config"));
    } else {
      throw_error<ValueError>(
          "load_model: {} holds a model of class '{}', which cannot be rebuilt from its config; build it in code "
          "and call load_weights",
          path.string(), class_name);
    }
  } catch (const nlohmann::json::exception& e) {
    throw_error<IOError>("load_model: {}/config.json: malformed config: {}", path.string(), e.what());
  }
  if (!model->built()) {
    throw_error<ValueError>("load_model: {}: the model has no input shape, so its weights cannot be created", path.string());
  }
  model->load_weights(path / kWeightsFile);
  if (config.contains("compile_config")) {
    const auto& cc = config["compile_config"];
    CompileOptions options{.optimizer = optimizers::Optimizer::from_config(cc.at("optimizer"))};
    if (!cc.at("loss").is_null()) options.loss = losses::Loss::from_config(cc["loss"]);
    for (const auto& m : cc.at("metrics")) options.metrics.push_back(metrics::Metric::from_config(m));
    model->compile(std::move(options));
    if (fs::exists(path / kOptimizerFile)) model->load_optimizer_state(path / kOptimizerFile);
  }
  return model;
}

}  // namespace chorus::models
