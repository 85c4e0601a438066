// Fuzzes the text line readers (text_line_dataset over LineReader) through a scratch
// file: every line is read, and must be valid UTF-8 or an IOError.
#include "chorus/data/dataset.h"
#include "chorus/data/line_reader.h"
#include "chorus/data/text_line_dataset.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  const std::string path = fuzz::write_file(fuzz::scratch_dir() / "input.txt", fuzz::as_text(data, size));
  fuzz::expect_only_chorus_errors("text_line_dataset", [&] {
    auto lines = data::text_line_dataset({path});
    for (auto it = lines.iterator(); auto line = it.next();) (void)line->tensor().string_at(0);
  });
  fuzz::expect_only_chorus_errors("LineReader", [&] {
    data::LineReader reader(path);
    while (reader.next()) {
    }
  });
  return 0;
}
