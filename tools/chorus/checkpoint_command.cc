// `chorus checkpoint inspect PATH`: what a saved model, a weights file or a backup
// directory holds — each file's size, each backup's epoch and batch, the tensors in
// each file of a shard set (checked against its index) — and the
// temporaries that crashed saves left beside it (removed by the next save of the same
// target unless their process still runs). A saved model is first put through
// load_model's checks (check_saved_model): an invalid one fails with load_model's message.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "chorus/callbacks/backup_files.h"
#include "chorus/core/error.h"
#include "chorus/io/atomic_file.h"
#include "chorus/models/model.h"
#include "chorus/models/sharded_checkpoint.h"
#include "tools/chorus/commands.h"

namespace chorus::cli {
namespace {

namespace fs = std::filesystem;

// Each shard set in `dir` (model, optimizer): its files and the tensors in each.
void print_shards(const fs::path& dir, const std::string& indent) {
  for (const char* prefix : {"model", "optimizer"}) {
    if (!fs::exists(dir / models::shard_index_name(prefix))) continue;
    const models::MappedTensors shards = models::map_shards(dir, prefix);
    fmt::print("{}{} in {} shard files ({}):\n", indent, prefix, shards.files.size(), models::shard_index_name(prefix));
    for (const auto& file : shards.files) {
      fmt::print("{}  {}:\n", indent, file->path().filename().string());
      for (const io::TensorEntry& t : file->header().tensors) {
        fmt::print("{}    {} {} {}\n", indent, t.name, t.shape.to_string(), dtype_name(t.dtype));
      }
    }
  }
}

void print_files(const fs::path& dir, const std::string& indent) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) fmt::print("{}{}  {} bytes\n", indent, file.filename().string(), fs::file_size(file));
  print_shards(dir, indent);
}

// A BackupAndRestore directory: each backup with where its fit stood.
void print_backups(const fs::path& dir) {
  for (const auto& [steps, backup] : callbacks::list_backups(dir)) {
    std::string where = "unreadable fit_state.json";
    try {
      const auto state = nlohmann::json::parse(io::read_file(backup / "fit_state.json")).at("fit_state");
      where = fmt::format("epoch {}, batch {}", state.at("epoch").get<int>() + 1, state.at("step").get<int64_t>());
    } catch (const std::exception&) {
    }
    fmt::print("  {}: after {} training steps ({})\n", backup.filename().string(), steps, where);
    print_files(backup, "    ");
  }
}

void inspect(const fs::path& path) {
  if (!fs::exists(path)) throw_error<IOError>("chorus checkpoint inspect: {} does not exist", path.string());
  if (fs::is_regular_file(path)) {
    fmt::print("{}: a file of {} bytes\n", path.string(), fs::file_size(path));
  } else if (!callbacks::list_backups(path).empty()) {
    fmt::print("{}: BackupAndRestore backups, newest first\n", path.string());
    print_backups(path);
  } else if (fs::exists(path / "state.json") || fs::exists(path / "config.json")) {
    // Called a saved model only when load_model would accept it; otherwise the error
    // names the file that is invalid.
    models::check_saved_model(path);
    fmt::print("{}: a saved model\n", path.string());
    print_files(path, "  ");
  } else {
    fmt::print("{}: a directory\n", path.string());
    print_files(path, "  ");
  }
  const fs::path beside = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = path.filename().string() + ".";
  for (const io::AtomicTemporary& t : io::list_atomic_temporaries(beside)) {
    if (t.path.filename().string().rfind(prefix, 0) != 0) continue;
    fmt::print("temporary {}: {}\n", t.path.string(),
               t.alive ? fmt::format("process {} is still writing it", t.pid)
                       : fmt::format("left by process {}, which ended; the next save removes it", t.pid));
  }
}

}  // namespace

void add_checkpoint_command(CLI::App& app) {
  CLI::App* checkpoint = app.add_subcommand("checkpoint", "Inspect saved models, weights and backups");
  checkpoint->require_subcommand(1);
  auto path = std::make_shared<std::string>();
  CLI::App* inspect_command = checkpoint->add_subcommand(
      "inspect", "List what a saved model, weights file or backup directory holds, and leftover temporaries");
  inspect_command->add_option("path", *path, "The model directory, weights file or backup directory")->required();
  inspect_command->callback([path] { inspect(*path); });
}

}  // namespace chorus::cli
