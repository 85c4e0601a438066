// The cost of BackupAndRestore on the MNIST tutorial (tools/chorus/recipes/mnist_tutorial.h): fit's
// steps/s at batch 64 with a backup every 50 steps against the same fit without, the two
// alternated in the same run (R repeats of one epoch each; medians). Also the time one
// backup takes. One JSON line per measurement (bench_util.h emit).
// Usage: backup_bench [--data DIR] [--repeats R] [--every N]
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "chorus/chorus.h"
#include "tools/chorus/recipes/mnist_tutorial.h"

namespace chorus {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Steps/s of one epoch of the tutorial's fit, with a backup every `every` steps (0: none).
double epoch_steps_per_second(const recipes::MnistDatasets& data, int64_t every, const fs::path& backup_dir,
                              int64_t* steps) {
  layers::Layer::reset_names();
  auto model = recipes::get_compiled_model();
  std::vector<Shared<models::Callback>> callbacks;
  if (every > 0) callbacks.push_back(callbacks::BackupAndRestore(backup_dir, {.save_freq = every}));
  *steps = data.train.cardinality();
  const auto start = Clock::now();
  model->fit(data.train, {.epochs = 1, .verbose = 0, .callbacks = callbacks});
  return static_cast<double>(*steps) / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus;
  std::string data_dir = datasets::fashion_mnist::kDebianDir;
  int repeats = 5;
  int64_t every = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--data") data_dir = argv[i + 1];
    if (flag == "--repeats") repeats = std::stoi(argv[i + 1]);
    if (flag == "--every") every = std::stoll(argv[i + 1]);
  }
  const recipes::MnistDatasets data = recipes::get_dataset(data_dir, 64);
  const fs::path backup_dir = fs::temp_directory_path() / "chorus-backup-bench";
  std::vector<double> plain, backed_up;
  int64_t steps = 0;
  for (int r = 0; r < repeats; ++r) {
    plain.push_back(epoch_steps_per_second(data, 0, backup_dir, &steps));
    backed_up.push_back(epoch_steps_per_second(data, every, backup_dir, &steps));
  }
  const double without = bench::median(plain), with = bench::median(backed_up);
  const double backups = static_cast<double>(steps / every);
  bench::emit({{"bench", "backup_overhead"},
               {"workload", "mnist tutorial, batch 64, one epoch"},
               {"steps_per_epoch", steps},
               {"backup_every", every},
               {"repeats", repeats},
               {"steps_per_s_without", without},
               {"steps_per_s_with", with},
               {"samples_without", plain},
               {"samples_with", backed_up},
               {"ratio_with_to_without", with / without},
               {"ms_per_backup", (static_cast<double>(steps) / with - static_cast<double>(steps) / without) / backups * 1e3}});
  fs::remove_all(backup_dir);
  return 0;
}
