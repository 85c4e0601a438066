// Writes the checkpoint fuzzer's seed corpus into a directory: for each base checkpoint
// (functional, Sequential) and each of its files, a selector byte (checkpoint_fuzzer.cc)
// followed by the file's bytes as chorus saved them.
//   checkpoint_seeds OUT_DIR
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz/checkpoint_base.h"

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: checkpoint_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out);
  const fs::path work = fs::temp_directory_path() / ("checkpoint_seeds_" + std::to_string(::getpid()));
  fs::create_directories(work);
  for (const bool sequential : {false, true}) {
    const fs::path dir = work / (sequential ? "sequential" : "functional");
    chorus::fuzz::save_base_checkpoint(dir, sequential);
    for (int i = 0; i < 4; ++i) {
      std::ifstream in(dir / chorus::fuzz::kCheckpointFiles[i], std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const char selector = static_cast<char>(i | (sequential ? 16 : 0));
      std::ofstream(out / fmt::format("{}_{}", sequential ? "sequential" : "functional", i), std::ios::binary)
          << selector << bytes;
    }
  }
  fs::remove_all(work);
  return 0;
}
