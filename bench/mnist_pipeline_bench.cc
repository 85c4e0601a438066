// MNIST input pipeline on one core:
//   load      mnist::load_data (train-images/labels .gz -> uint8 images, int32 labels):
//             MB/s of decoded pixels, against zlib alone inflating the same file (same run)
//   idx_all   all four IDX files decoded (load_data of both splits), once from the .gz
//             files and once from raw copies of them (written to a temporary directory
//             first): seconds against the 0.05 s target, and against zlib alone inflating
//             the four .gz files
//   batch     from_tensor_slices -> batch(64), uncached: GB/s of uint8 pixels, against
//             memcpy of the same bytes
//   cached    the same with .cache(), one pass to fill it, then timed passes: GB/s of
//             uint8 pixels, against a loop over a vector of the same batches; target 1 GB/s
// Usage: mnist_pipeline_bench [mnist dir] (default $CHORUS_SHARED_DATA/mnist or
// <repo>/../shared/data/mnist).
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>
#include <zlib.h>

#include "bench/bench_util.h"
#include "chorus/backend/cpu/parallel.h"
#include "chorus/data/mnist.h"

namespace chorus {
namespace {

std::string default_dir() {
  if (const char* env = std::getenv("CHORUS_SHARED_DATA")) return std::string(env) + "/mnist";
  return (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "shared/data/mnist").string();
}

// zlib alone: inflates the file into a buffer and discards it. Returns the bytes.
size_t inflate_only(const std::string& path, std::vector<char>& buffer) {
  gzFile file = gzopen(path.c_str(), "rb");
  gzbuffer(file, 1 << 20);
  size_t total = 0;
  while (true) {
    const int got = gzread(file, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (got <= 0) break;
    total += static_cast<size_t>(got);
  }
  gzclose(file);
  return total;
}

// One pass; returns the pixel bytes it yielded.
int64_t run_pass(const data::Dataset& dataset) {
  int64_t bytes = 0;
  for (auto it = dataset.iterator(); auto batch = it.next();) bytes += static_cast<int64_t>((*batch)[0].tensor().nbytes());
  return bytes;
}

constexpr const char* kFiles[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                   "t10k-labels-idx1-ubyte"};

// Inflates `dir`'s four .gz files into `raw_dir` under their names without ".gz".
void write_raw_copies(const std::string& dir, const std::filesystem::path& raw_dir, std::vector<char>& buffer) {
  std::filesystem::create_directories(raw_dir);
  for (const char* name : kFiles) {
    gzFile in = gzopen((dir + "/" + name + ".gz").c_str(), "rb");
    std::FILE* out = std::fopen((raw_dir / name).c_str(), "wb");
    if (in == nullptr || out == nullptr) std::abort();
    for (int got; (got = gzread(in, buffer.data(), static_cast<unsigned>(buffer.size()))) > 0;) {
      std::fwrite(buffer.data(), 1, static_cast<size_t>(got), out);
    }
    gzclose(in);
    std::fclose(out);
  }
}

void load_both_splits(const std::string& dir) {
  const Tree train = datasets::mnist::load_data(dir, datasets::Split::kTrain);
  const Tree test = datasets::mnist::load_data(dir, datasets::Split::kTest);
  if (train[0].tensor().dim(0) + test[0].tensor().dim(0) != 70000) std::abort();
}

// The idx_all cases: both splits from the .gz files, then from raw copies.
void bench_idx_all(const std::string& dir, std::vector<char>& scratch) {
  const double inflate = bench::median_seconds([&] {
    for (const char* name : kFiles) inflate_only(dir + "/" + name + ".gz", scratch);
  }, 1, 5, 1);
  const double gz = bench::median_seconds([&] { load_both_splits(dir); }, 1, 7, 1);
  const std::filesystem::path raw_dir =
      std::filesystem::temp_directory_path() / ("chorus_mnist_raw_" + std::to_string(::getpid()));
  write_raw_copies(dir, raw_dir, scratch);
  const double raw = bench::median_seconds([&] { load_both_splits(raw_dir.string()); }, 1, 7, 1);
  std::filesystem::remove_all(raw_dir);
  for (const auto& [name, seconds] : {std::pair{"idx_all_gz", gz}, std::pair{"idx_all_raw", raw}}) {
    bench::emit({{"bench", "mnist_pipeline"}, {"case", name}, {"threads", 1}, {"seconds", seconds},
                 {"target_seconds", 0.05}, {"ratio_to_target", 0.05 / seconds},
                 {"reference", "zlib gzread of the four .gz files alone"}, {"reference_seconds", inflate},
                 {"ratio_to_reference", inflate / seconds}});
  }
}

void report(const std::string& name, double seconds, double bytes, const std::string& unit, double target,
            const std::string& reference, double reference_seconds) {
  const double scale = unit == "GB/s" ? 1e9 : 1e6;
  nlohmann::json record = {{"bench", "mnist_pipeline"}, {"case", name},       {"threads", 1},
                           {"bytes", bytes},            {"seconds", seconds}, {"unit", unit},
                           {"rate", bytes / seconds / scale},
                           {"reference", reference},    {"reference_seconds", reference_seconds},
                           {"ratio_to_reference", reference_seconds / seconds}};
  if (target > 0) {
    record["target"] = target;
    record["ratio_to_target"] = bytes / seconds / scale / target;
  }
  bench::emit(record);
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus;
  const std::string dir = argc > 1 ? argv[1] : default_dir();
  backend::cpu::set_intra_op_threads(1);

  const std::string images_path = dir + "/train-images-idx3-ubyte.gz";
  std::vector<char> scratch(1 << 20);
  const double inflate = bench::median_seconds([&] { inflate_only(images_path, scratch); }, 1, 5, 1);
  Tree train;
  const double load = bench::median_seconds([&] { train = datasets::mnist::load_data(dir); }, 1, 5, 1);
  const Tensor& images = train[0].tensor();
  const double raw_bytes = static_cast<double>(images.numel());  // one byte per pixel in the file
  report("load_gz", load, raw_bytes, "MB/s", 0, "zlib gzread of train-images alone", inflate);
  bench_idx_all(dir, scratch);

  const double pixel_bytes = static_cast<double>(images.nbytes());
  std::vector<char> destination(images.nbytes());
  const double copy = bench::median_seconds([&] { std::memcpy(destination.data(), images.raw_data(), images.nbytes()); },
                                            1, 7, 1);
  const data::Dataset batched = data::Dataset::from_tensor_slices(train).batch(64);
  const double uncached = bench::median_seconds([&] { run_pass(batched); }, 1, 5, 1);
  report("batch64_uncached", uncached, pixel_bytes, "GB/s", 0, "memcpy of all pixels", copy);

  const data::Dataset cached = batched.cache();
  std::vector<Tree> batches;  // the reference: handing out stored batches
  for (auto it = cached.iterator(); auto batch = it.next();) batches.push_back(*batch);  // fills the cache
  const double stored = bench::median_seconds([&] {
    int64_t bytes = 0;
    for (const Tree& batch : batches) bytes += static_cast<int64_t>(Tree(batch)[0].tensor().nbytes());
    if (bytes != static_cast<int64_t>(pixel_bytes)) std::abort();
  }, 3, 7, 1);
  const double from_cache = bench::median_seconds([&] { run_pass(cached); }, 3, 7, 1);
  report("batch64_cached", from_cache, pixel_bytes, "GB/s", 1.0, "a loop over a vector of the same batches", stored);
  return 0;
}
