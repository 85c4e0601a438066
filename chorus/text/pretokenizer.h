// BERT/KerasNLP pre-tokenisation: the text -> words step that runs before WordPiece (and
// before the vocabulary learner), as keras_hub's word_piece_tokenizer.pretokenize does it.
// Stateless functions; thread-safe.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::text {

struct PretokenizeOptions {
  // Case-fold each word (NFKC + full case folding, tf_text.case_fold_utf8). Default true.
  bool lowercase = true;
  // Decompose (NFD) and drop combining marks (\p{Mn}) before splitting. Default false.
  bool strip_accents = false;
  // Split into words; false treats the whole input as one pre-split word. Default true.
  bool split = true;
  // Isolate CJK ideographs (unicode.h is_cjk_ideograph) as words of their own. Default true.
  bool split_on_cjk = true;
};

// Calls `on_word` for each word of `text` in order. With `split`, words are separated by
// whitespace and control/format characters — RE2's \s (ASCII space \t \n \f \r), \p{Cc}
// and \p{Cf}, which are dropped — and by punctuation, which is kept as a one-character
// word: the ASCII ranges !-/ :-@ [-` {-~ and Unicode \p{P}. Note that, as in KerasNLP,
// non-ASCII spaces such as U+00A0 do not separate words. Case folding happens per word
// after splitting (so a fullwidth "！" is split off, then becomes "!"). Words that fold to
// nothing are skipped. The string_view passed is valid only during the call.
// Throws ValueError on invalid UTF-8, naming the byte offset.
void pretokenize(std::string_view text, const PretokenizeOptions& options,
                 const std::function<void(std::string_view word)>& on_word);

// The words as strings.
std::vector<std::string> pretokenize(std::string_view text, const PretokenizeOptions& options = {});

}  // namespace chorus::text
