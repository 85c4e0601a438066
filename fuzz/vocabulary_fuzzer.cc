// Fuzzes vocabulary files (one token per line, as BERT's vocab.txt) through a scratch
// file: Vocabulary::from_file, then a WordPiece tokenizer built on the same file
// tokenizing and detokenizing a fixed sentence.
#include "chorus/text/vocabulary.h"
#include "chorus/text/word_piece_tokenizer.h"
#include "fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus;
  const std::string path = fuzz::write_file(fuzz::scratch_dir() / "vocab.txt", fuzz::as_text(data, size));
  fuzz::expect_only_chorus_errors("Vocabulary::from_file", [&] { text::Vocabulary::from_file(path); });
  fuzz::expect_only_chorus_errors("WordPieceTokenizer::from_file", [&] {
    const auto tokenizer = text::WordPieceTokenizer::from_file(path);
    for (const auto& ids : tokenizer.tokenize(std::vector<std::string>{"The quick brown fox, unaffable [MASK] x##y"})) {
      (void)tokenizer.detokenize(ids);
    }
  });
  return 0;
}
