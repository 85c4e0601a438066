// Pre-tokenisation with an ASCII fast path: ASCII bytes are classified by a table and
// lowercased in place; only words holding non-ASCII bytes go through ICU.
#include "chorus/text/pretokenizer.h"

#include <array>

#include "chorus/text/unicode.h"

namespace chorus::text {
namespace {

enum class CharClass : uint8_t { kWord, kDrop, kKeep };

constexpr std::array<CharClass, 128> ascii_classes() {
  std::array<CharClass, 128> table{};
  for (int c = 0; c < 128; ++c) {
    const bool control = c < 0x20 || c == 0x7F;  // \p{Cc}, which covers \t \n \v \f \r
    const bool punct = (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
                       (c >= '{' && c <= '~');
    table[static_cast<size_t>(c)] = (control || c == ' ') ? CharClass::kDrop : punct ? CharClass::kKeep : CharClass::kWord;
  }
  return table;
}
constexpr std::array<CharClass, 128> kAsciiClasses = ascii_classes();

CharClass classify(char32_t c, bool split_on_cjk) {
  if (c < 0x80) return kAsciiClasses[c];
  if (is_control_or_format(c)) return CharClass::kDrop;
  if (is_punctuation(c) || (split_on_cjk && is_cjk_ideograph(c))) return CharClass::kKeep;
  return CharClass::kWord;
}

// Emits `word` after optional case folding; `scratch` is reused between words.
void emit(std::string_view word, bool lowercase, bool ascii, std::string& scratch,
          const std::function<void(std::string_view)>& on_word) {
  if (word.empty()) return;
  if (!lowercase) {
    on_word(word);
    return;
  }
  if (ascii) {
    scratch.assign(word);
    for (char& ch : scratch) {
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    }
  } else {
    scratch = case_fold(word);
  }
  if (!scratch.empty()) on_word(scratch);
}

}  // namespace

void pretokenize(std::string_view text, const PretokenizeOptions& options,
                 const std::function<void(std::string_view word)>& on_word) {
  std::string stripped;
  if (options.strip_accents) {
    stripped = strip_accents(text);
    text = stripped;
  } else {
    validate_utf8(text);
  }
  std::string scratch;
  if (!options.split) {
    bool ascii = true;
    for (const char ch : text) ascii = ascii && static_cast<unsigned char>(ch) < 0x80;
    emit(text, options.lowercase, ascii, scratch, on_word);
    return;
  }
  size_t start = 0;  // of the current word
  bool ascii = true;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t here = pos;
    const auto byte = static_cast<unsigned char>(text[pos]);
    const char32_t c = byte < 0x80 ? (++pos, byte) : decode_utf8(text, pos);
    const CharClass cls = classify(c, options.split_on_cjk);
    if (cls == CharClass::kWord) {
      ascii = ascii && byte < 0x80;
      continue;
    }
    emit(text.substr(start, here - start), options.lowercase, ascii, scratch, on_word);
    if (cls == CharClass::kKeep) emit(text.substr(here, pos - here), options.lowercase, byte < 0x80, scratch, on_word);
    start = pos;
    ascii = true;
  }
  emit(text.substr(start), options.lowercase, ascii, scratch, on_word);
}

std::vector<std::string> pretokenize(std::string_view text, const PretokenizeOptions& options) {
  std::vector<std::string> words;
  pretokenize(text, options, [&](std::string_view word) { words.emplace_back(word); });
  return words;
}

}  // namespace chorus::text
