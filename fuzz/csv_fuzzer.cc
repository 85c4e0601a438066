// Fuzzes read_csv through a scratch file. The first byte picks the options (header or
// not, inferred column types or float32, delimiter), so one corpus covers each layout.
#include "chorus/data/csv.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  data::CsvOptions options;
  options.header = (flags & 1) == 0;
  if (!options.header) options.column_names = {"a", "b", "c"};
  options.infer_column_types = (flags & 2) == 0;
  options.delimiter = (flags & 4) != 0 ? '\t' : ',';
  if ((flags & 8) != 0) options.column_defaults = {{"a", 0.0}, {"b", -1.0}};
  const std::string path = fuzz::write_file(fuzz::scratch_dir() / "input.csv", fuzz::as_text(data + 1, size - 1));
  fuzz::expect_only_chorus_errors("read_csv", [&] { data::read_csv(path, options); });
  return 0;
}
