// Fuzzes read_idx (IDX files, plain or gzipped: MNIST's format) through a scratch file,
// reading as the file's own dtype and converted to float32 as the MNIST loader does.
#include "chorus/data/idx.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  const std::string path = fuzz::write_file(fuzz::scratch_dir() / "input.idx", fuzz::as_text(data, size));
  fuzz::expect_only_chorus_errors("read_idx", [&] { data::read_idx(path); });
  fuzz::expect_only_chorus_errors("read_idx(float32)", [&] { data::read_idx(path, kFloat32); });
  return 0;
}
