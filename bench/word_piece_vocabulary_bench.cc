// WordPiece vocabulary learning on WikiText-2, one core, as the BERT MLM tutorial does it
// (tools/chorus/recipes/bert_mlm_tutorial.cc): the lines of wiki.train.tokens longer than 100 bytes,
// compute_word_piece_vocabulary with vocabulary_size 30,522 and lowercasing. Reports
// seconds, lines/s and MB/s of raw text, median of passes, and the learner alone (on word
// counts made beforehand). The in-run reference is the floor of the whole: pre-tokenising
// the lines and counting their words into the map the learner takes, nothing learned.
// Usage: word_piece_vocabulary_bench [data root] (default $CHORUS_SHARED_DATA or
// <repo>/../shared/data; reads wikitext-2/ under it).
#include <map>
#include <unordered_map>

#include "bench/bench_util.h"
#include "chorus/text/pretokenizer.h"
#include "chorus/text/vocabulary.h"
#include "chorus/text/word_piece_vocabulary.h"

namespace chorus {
namespace {

// As compute_word_piece_vocabulary counts them: hashed, then ordered for the learner.
std::map<std::string, int64_t> word_counts(const std::vector<std::string>& lines) {
  std::unordered_map<std::string, int64_t, text::StringHash, std::equal_to<>> counts;
  for (const std::string& line : lines) {
    text::pretokenize(line, {.lowercase = true}, [&](std::string_view word) {
      if (const auto it = counts.find(word); it != counts.end()) {
        ++it->second;
      } else {
        counts.emplace(word, 1);
      }
    });
  }
  return {counts.begin(), counts.end()};
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus;
  const std::vector<std::string> lines =
      bench::long_lines(bench::shared_data_root(argc, argv) + "/wikitext-2/wiki.train.tokens");
  int64_t bytes = 0;
  for (const std::string& line : lines) bytes += static_cast<int64_t>(line.size());
  const text::WordPieceVocabularyOptions options{.vocabulary_size = 30522, .lowercase = true};

  size_t vocabulary_size = 0;
  const double total_s = bench::median_seconds(
      [&] { vocabulary_size = text::compute_word_piece_vocabulary(lines, options).size(); }, 1, 5, 1);
  const std::map<std::string, int64_t> counts = word_counts(lines);
  const double learn_s =
      bench::median_seconds([&] { (void)text::learn_word_piece_vocabulary(counts, options); }, 1, 5, 1);
  const double count_s = bench::median_seconds([&] { (void)word_counts(lines); }, 1, 5, 1);

  const double mb = static_cast<double>(bytes) / 1e6;
  bench::emit({{"bench", "word_piece_vocabulary"},
               {"case", "bert_mlm_tutorial_wikitext2"},
               {"lines", lines.size()},
               {"text_mb", mb},
               {"distinct_words", counts.size()},
               {"vocabulary_size", vocabulary_size},
               {"seconds", total_s},
               {"lines_per_s", static_cast<double>(lines.size()) / total_s},
               {"mb_per_s", mb / total_s},
               {"learner_only_seconds", learn_s},
               {"pretokenize_and_count_seconds", count_s},
               {"ratio_vs_pretokenize_and_count", total_s / count_s},
               {"threads", 1}});
  return 0;
}
