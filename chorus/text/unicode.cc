// ICU-backed Unicode helpers. Strings are validated before they reach ICU, whose UTF-8
// entry points would otherwise replace ill-formed bytes with U+FFFD behind our back.
#include "chorus/text/unicode.h"

#include <unicode/bytestream.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include "chorus/core/error.h"

namespace chorus::text {
namespace {

const icu::Normalizer2& normalizer(NormalizationForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (form) {
    case NormalizationForm::kNFC: n = icu::Normalizer2::getNFCInstance(status); break;
    case NormalizationForm::kNFD: n = icu::Normalizer2::getNFDInstance(status); break;
    case NormalizationForm::kNFKC: n = icu::Normalizer2::getNFKCInstance(status); break;
    case NormalizationForm::kNFKD: n = icu::Normalizer2::getNFKDInstance(status); break;
  }
  if (U_FAILURE(status) || n == nullptr) throw_error<Error>("normalize: ICU has no normaliser: {}", u_errorName(status));
  return *n;
}

std::string apply(const icu::Normalizer2& n, std::string_view text, const char* op) {
  validate_utf8(text);
  UErrorCode status = U_ZERO_ERROR;
  const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  if (n.isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return std::string(text);
  std::string out;
  icu::StringByteSink<std::string> sink(&out, static_cast<int32_t>(text.size()));
  status = U_ZERO_ERROR;
  n.normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status)) throw_error<ValueError>("{}: ICU failed on a {}-byte string: {}", op, text.size(), u_errorName(status));
  return out;
}

icu::UnicodeString to_icu(std::string_view text) {
  validate_utf8(text);
  return icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
}

std::string from_icu(const icu::UnicodeString& s) {
  std::string out;
  s.toUTF8String(out);
  return out;
}

bool is_ascii(std::string_view text) {
  for (const char ch : text) {
    if (static_cast<unsigned char>(ch) >= 0x80) return false;
  }
  return true;
}

}  // namespace

std::string normalize(std::string_view text, NormalizationForm form) {
  return apply(normalizer(form), text, "normalize");
}

std::string case_fold(std::string_view text) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFKCCasefoldInstance(status);
  if (U_FAILURE(status)) throw_error<Error>("case_fold: ICU has no NFKC_Casefold normaliser: {}", u_errorName(status));
  return apply(*n, text, "case_fold");
}

std::string to_lower(std::string_view text) { return from_icu(to_icu(text).toLower(icu::Locale::getRoot())); }
std::string to_upper(std::string_view text) { return from_icu(to_icu(text).toUpper(icu::Locale::getRoot())); }

std::string strip_accents(std::string_view text) {
  if (is_ascii(text)) return std::string(text);  // ASCII has no combining marks
  const std::string nfd = normalize(text, NormalizationForm::kNFD);
  std::string out;
  out.reserve(nfd.size());
  size_t pos = 0;
  while (pos < nfd.size()) {
    const size_t start = pos;
    const char32_t c = decode_utf8(nfd, pos);
    if (!is_nonspacing_mark(c)) out.append(nfd, start, pos - start);
  }
  return out;
}

char32_t decode_utf8(std::string_view text, size_t& pos) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const size_t start = pos;
  UChar32 c = 0;
  U8_NEXT(s, pos, text.size(), c);
  if (c < 0) {
    throw_error<ValueError>("invalid UTF-8 at byte {} of {}: 0x{:02x} does not start a well-formed sequence", start,
                            text.size(), s[start]);
  }
  return static_cast<char32_t>(c);
}

void validate_utf8(std::string_view text) { static_cast<void>(utf8_length(text)); }  // decoding validates

bool is_valid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  size_t pos = 0;
  while (pos < text.size()) {
    UChar32 c = 0;
    U8_NEXT(s, pos, text.size(), c);
    if (c < 0) return false;
  }
  return true;
}

std::string replace_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    UChar32 c = 0;
    U8_NEXT(s, pos, text.size(), c);  // skips one maximal ill-formed subsequence
    if (c < 0) {
      append_utf8(out, 0xFFFD);
    } else {
      out.append(text.substr(start, pos - start));
    }
  }
  return out;
}

int64_t utf8_length(std::string_view text) {
  int64_t n = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
    } else {
      decode_utf8(text, pos);
    }
    ++n;
  }
  return n;
}

void append_utf8(std::string& out, char32_t c) {
  uint8_t buf[U8_MAX_LENGTH];
  int32_t n = 0;
  UBool error = false;
  U8_APPEND(buf, n, U8_MAX_LENGTH, static_cast<UChar32>(c), error);
  if (error) throw_error<ValueError>("append_utf8: U+{:04X} is not a Unicode scalar value", static_cast<uint32_t>(c));
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

std::u32string to_utf32(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) out.push_back(decode_utf8(text, pos));
  return out;
}

std::string to_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) append_utf8(out, c);
  return out;
}

bool is_punctuation(char32_t c) { return u_ispunct(static_cast<UChar32>(c)); }

bool is_control_or_format(char32_t c) {
  const int8_t type = u_charType(static_cast<UChar32>(c));
  return type == U_CONTROL_CHAR || type == U_FORMAT_CHAR;
}

bool is_whitespace(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }
bool is_nonspacing_mark(char32_t c) { return u_charType(static_cast<UChar32>(c)) == U_NON_SPACING_MARK; }
bool is_letter(char32_t c) { return u_isalpha(static_cast<UChar32>(c)); }

bool is_number(char32_t c) {
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_N_MASK) != 0;
}

bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

}  // namespace chorus::text
