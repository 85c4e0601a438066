// Fuzzes load_model on damaged checkpoint directories (config.json, state.json and the
// two safetensors files). Input: a selector byte, then the bytes of one file.
//   selector bits 0-1: which file (checkpoint_base.h's kCheckpointFiles order)
//   bit 2: delete that file instead of writing the bytes
//   bit 3: load with LoadModelOptions{.compile = false}
//   bit 4: damage the Sequential base checkpoint rather than the functional one
// The other files are those chorus saved (copied fresh for every input).
#include <filesystem>

#include "fuzz/checkpoint_base.h"
#include "fuzz/fuzz_util.h"

namespace {

namespace fs = std::filesystem;

const fs::path& base_checkpoint(bool sequential) {
  static const fs::path functional_dir = [] {
    chorus::fuzz::save_base_checkpoint(chorus::fuzz::scratch_dir() / "functional", false);
    return chorus::fuzz::scratch_dir() / "functional";
  }();
  static const fs::path sequential_dir = [] {
    chorus::fuzz::save_base_checkpoint(chorus::fuzz::scratch_dir() / "sequential", true);
    return chorus::fuzz::scratch_dir() / "sequential";
  }();
  return sequential ? sequential_dir : functional_dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  const fs::path dir = fuzz::scratch_dir() / "checkpoint";
  fs::remove_all(dir);
  fs::copy(base_checkpoint((selector & 16) != 0), dir);
  const fs::path file = dir / fuzz::kCheckpointFiles[selector & 3];
  if ((selector & 4) != 0) {
    fs::remove(file);
  } else {
    fuzz::write_file(file, fuzz::as_text(data + 1, size - 1));
  }
  fuzz::expect_only_chorus_errors("load_model", [&] {
    auto model = models::load_model(dir, {.compile = (selector & 8) == 0});
    (void)(*model)(zeros(Shape{1, 4}));
  });
  return 0;
}
