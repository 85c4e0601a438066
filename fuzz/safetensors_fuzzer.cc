// Fuzzes load_safetensors (the weights and optimizer files of a checkpoint) through a
// scratch file.
#include "chorus/io/safetensors.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  const std::string path = fuzz::write_file(fuzz::scratch_dir() / "input.safetensors", fuzz::as_text(data, size));
  fuzz::expect_only_chorus_errors("load_safetensors", [&] { io::load_safetensors(path); });
  return 0;
}
