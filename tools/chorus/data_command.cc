// `chorus data`: fetches known datasets into the cache (chorus/data/download.h) and lists
// them. The fetched directory goes to stdout, so scripts can capture it; progress goes to
// stderr, and only when stderr is a terminal.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "chorus/data/dataset_registry.h"
#include "chorus/data/download.h"
#include "tools/chorus/commands.h"

namespace chorus::cli {
namespace {

struct DataArgs {
  std::string name;
  std::string dir;
  std::string mirror;
};

std::string megabytes(int64_t bytes) { return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6); }

// Rewrites one stderr line at most 10 times a second, and once more when a file ends.
class ProgressLine {
 public:
  void update(const data::FetchProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const bool done = p.bytes_total > 0 && p.bytes_done >= p.bytes_total;
    if (p.file == last_file_ && p.bytes_done == last_bytes_) return;  // curl repeats itself
    if (!done && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    last_file_ = p.file;
    last_bytes_ = p.bytes_done;
    std::string line = fmt::format("{}: {}  {}", p.dataset, p.file, megabytes(p.bytes_done));
    if (p.bytes_total > 0) {
      line += fmt::format(" / {}  {:3.0f}%", megabytes(p.bytes_total), 100.0 * p.bytes_done / p.bytes_total);
    }
    fmt::print(stderr, "\r{:<78}", line);
    printed_ = true;
  }
  ~ProgressLine() {
    if (printed_) fmt::print(stderr, "\n");
  }

 private:
  std::chrono::steady_clock::time_point last_{};
  std::string last_file_;
  int64_t last_bytes_ = -1;
  bool printed_ = false;
};

void run_fetch(const DataArgs& args) {
  data::FetchOptions options;
  options.dir = args.dir;
  options.mirror = args.mirror;
  std::string dir;
  {
    ProgressLine progress;
    if (::isatty(STDERR_FILENO)) options.on_progress = [&](const data::FetchProgress& p) { progress.update(p); };
    dir = data::fetch(args.name, options);
  }
  fmt::print("{}\n", dir);
}

void run_list(const DataArgs& args) {
  data::FetchOptions options;
  options.dir = args.dir;
  fmt::print("cache: {}\n", data::data_home(options));
  for (const data::DatasetSpec& spec : data::known_datasets()) {
    int64_t bytes = 0;
    for (const data::RemoteFile& file : spec.files) bytes += file.size_bytes;
    const auto dir = data::find_fetched(spec.name, options);
    fmt::print("{:<16} {:>9}  {}\n{:<16} {:>9}  {}\n", spec.name, megabytes(bytes),
               dir ? "fetched: " + *dir : std::string("not fetched"), "", "", spec.description);
  }
}

}  // namespace

void add_data_command(CLI::App& app) {
  auto args = std::make_shared<DataArgs>();
  CLI::App* data = app.add_subcommand("data", "Download and inspect the datasets chorus knows");
  data->require_subcommand(1);
  const std::string dir_help = "cache directory (default: $CHORUS_DATA_HOME, else ~/.cache/chorus/datasets)";

  CLI::App* fetch = data->add_subcommand("fetch", "Download a dataset, verify its SHA-256 and print its directory");
  fetch->add_option("name", args->name, "dataset name, as `chorus data list` shows it")->required();
  fetch->add_option("--dir", args->dir, dir_help);
  fetch->add_option("--mirror", args->mirror,
                    "base URL that replaces the publisher's (default: $CHORUS_DATA_MIRROR); digests still apply");
  fetch->callback([args] { run_fetch(*args); });

  CLI::App* list = data->add_subcommand("list", "List the known datasets and whether each is fetched");
  list->add_option("--dir", args->dir, dir_help);
  list->callback([args] { run_list(*args); });
}

}  // namespace chorus::cli
