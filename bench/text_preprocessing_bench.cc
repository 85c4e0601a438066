// BERT masked-LM preprocessing throughput on WikiText-2, one core: the lines of
// wiki.train.tokens longer than 100 bytes (as the tutorial filters them), tokenized by
// BertTokenizer on bert_tiny_en_uncased's vocab.txt, packed to 128 ([CLS] ... [SEP]) and
// masked (BertMaskedLMPreprocessor, batches of 64). Reports MB/s of raw text and tokens/s
// (WordPiece ids before packing), median of passes, against the 10 MB/s target, and the
// same pipeline with the PyTorch peer's word-level tokenizer as the in-run reference.
// Usage: text_preprocessing_bench [data root] (default $CHORUS_SHARED_DATA or
// <repo>/../shared/data; reads wikitext-2/ and bert/ under it).
#include <memory>

#include "bench/bench_util.h"
#include "chorus/text/bert_masked_lm_preprocessor.h"
#include "chorus/text/word_tokenizer.h"

namespace chorus {
namespace {

constexpr int kBatch = 64;
constexpr int64_t kSequenceLength = 128;

// One pass of the full BERT pipeline (tokenize, pack, mask) in batches of kBatch.
void bert_pass(const text::BertMaskedLMPreprocessor& preprocessor, const std::vector<std::string>& lines,
               uint64_t epoch) {
  std::vector<std::string> batch;
  for (size_t start = 0; start < lines.size(); start += kBatch) {
    batch.assign(lines.begin() + static_cast<ptrdiff_t>(start),
                 lines.begin() + static_cast<ptrdiff_t>(std::min(lines.size(), start + kBatch)));
    const Tree out = preprocessor.call_batch(batch, epoch, start);
    if (out["token_ids"].tensor().dim(1) != kSequenceLength) throw Error("text_preprocessing_bench: bad output shape");
  }
}

int64_t count_tokens(const text::BertTokenizer& tokenizer, const std::vector<std::string>& lines) {
  int64_t tokens = 0;
  std::vector<int32_t> ids;
  for (const std::string& line : lines) {
    ids.clear();
    tokenizer.tokenize_into(line, ids);
    tokens += static_cast<int64_t>(ids.size());
  }
  return tokens;
}

// The peer's pipeline: word ids, [CLS] w... [SEP] padded to 128, the same masking.
void word_pass(const text::WordTokenizer& tokenizer, const text::MultiSegmentPacker& packer,
               const text::MaskedLMMaskGenerator& masker, const std::vector<std::string>& lines, uint64_t epoch) {
  std::vector<int32_t> ids, packed(kSequenceLength), segments(kSequenceLength), masked(kSequenceLength);
  const auto m = static_cast<size_t>(masker.options().mask_selection_length);
  std::vector<int32_t> positions(m), labels(m);
  std::vector<float> weights(m);
  auto padding = std::make_unique<bool[]>(kSequenceLength);
  for (size_t i = 0; i < lines.size(); ++i) {
    ids.clear();
    tokenizer.tokenize_into(lines[i], ids);
    packer.pack({std::span<const int32_t>(ids)}, packed.data(), segments.data(), padding.get());
    masker.mask(packed, epoch, i, masked.data(), positions.data(), labels.data(), weights.data());
  }
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus;
  const std::string root = bench::shared_data_root(argc, argv);
  const std::vector<std::string> lines = bench::long_lines(root + "/wikitext-2/wiki.train.tokens");
  int64_t bytes = 0;
  for (const std::string& line : lines) bytes += static_cast<int64_t>(line.size());
  const text::BertMaskedLMPreprocessor bert(text::BertTokenizer::from_file(root + "/bert/vocab.txt"),
                                            {.sequence_length = kSequenceLength, .seed = 1});
  const int64_t tokens = count_tokens(bert.tokenizer(), lines);
  uint64_t epoch = 0;
  const double tokenize_s = bench::median_seconds([&] { count_tokens(bert.tokenizer(), lines); }, 1, 3, 1);
  const double bert_s = bench::median_seconds([&] { bert_pass(bert, lines, epoch++); }, 1, 3, 1);

  const text::WordTokenizer words(text::Vocabulary(text::build_word_vocabulary(lines)));
  const text::MultiSegmentPacker packer({.sequence_length = kSequenceLength, .start_value = 1, .end_value = 2});
  const text::MaskedLMMaskGenerator masker({.vocabulary_size = words.vocabulary_size(),
                                            .mask_selection_length = 96,
                                            .mask_token_id = 3,
                                            .unselectable_token_ids = {0, 1, 2, 3, 4},
                                            .seed = 1});
  const double word_s = bench::median_seconds([&] { word_pass(words, packer, masker, lines, epoch++); }, 1, 3, 1);

  const double mb = static_cast<double>(bytes) / 1e6;
  bench::emit({{"bench", "text_preprocessing"},
               {"case", "bert_mlm_wikitext2"},
               {"lines", lines.size()},
               {"text_mb", mb},
               {"wordpiece_tokens", tokens},
               {"tokenize_mb_per_s", mb / tokenize_s},
               {"tokenize_tokens_per_s", static_cast<double>(tokens) / tokenize_s},
               {"pipeline_mb_per_s", mb / bert_s},
               {"pipeline_tokens_per_s", static_cast<double>(tokens) / bert_s},
               {"pipeline_examples_per_s", static_cast<double>(lines.size()) / bert_s},
               {"target_mb_per_s", 10.0},
               {"meets_target", mb / bert_s >= 10.0},
               {"word_level_pipeline_mb_per_s", mb / word_s},
               {"ratio_bert_vs_word_level", word_s / bert_s},
               {"threads", 1}});
  return 0;
}
