// Unicode on UTF-8 std::strings, by ICU: normalisation, case folding and mapping, code
// point decoding and category predicates (what TF Text and KerasNLP use). Free functions
// over values; ICU's normalisers are process-wide immutable singletons, so all of this is
// thread-safe.
//
// Invalid UTF-8 policy: every function that decodes throws ValueError naming the byte
// offset and the offending byte (`invalid UTF-8 at byte 3 of 7: 0xff`); nothing is
// silently replaced. replace_invalid_utf8() is the explicit opt-in to U+FFFD replacement.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace chorus::text {

enum class NormalizationForm { kNFC, kNFD, kNFKC, kNFKD };

// `text` in the given Unicode normalisation form (tf_text.normalize_utf8).
std::string normalize(std::string_view text, NormalizationForm form);

// NFKC followed by full Unicode case folding (ICU's NFKC_Casefold; tf_text.case_fold_utf8,
// the "lowercase" of BERT tokenizers): "Straße" -> "strasse", "ＡＢＣ" -> "abc".
std::string case_fold(std::string_view text);

// Full Unicode lower/upper case mapping in the root locale ("ΣΑΣ" -> "σας", "ß" -> "SS").
std::string to_lower(std::string_view text);
std::string to_upper(std::string_view text);

// `text` with every combining mark (\p{Mn}) removed after NFD: "Café" -> "Cafe"
// (KerasNLP's strip_accents).
std::string strip_accents(std::string_view text);

// Throws ValueError if `text` is not well-formed UTF-8 (overlong forms, surrogates and
// code points above U+10FFFF are ill-formed), naming the byte offset.
void validate_utf8(std::string_view text);
bool is_valid_utf8(std::string_view text);
// `text` with each maximal ill-formed subsequence replaced by U+FFFD (as ICU converts).
std::string replace_invalid_utf8(std::string_view text);

// The number of code points in `text`. Throws ValueError on invalid UTF-8.
int64_t utf8_length(std::string_view text);

// Decodes the code point starting at text[pos] and advances pos past it.
// REQUIRES: pos < text.size(). Throws ValueError on invalid UTF-8, naming the offset.
char32_t decode_utf8(std::string_view text, size_t& pos);
// Appends the UTF-8 encoding of `c` to `out`. REQUIRES: c is a Unicode scalar value.
void append_utf8(std::string& out, char32_t c);
std::u32string to_utf32(std::string_view text);
std::string to_utf8(std::u32string_view text);

// Code point predicates (Unicode general categories and properties, from ICU's tables).
bool is_punctuation(char32_t c);            // \p{P}: Pc Pd Ps Pe Pi Pf Po
bool is_control_or_format(char32_t c);      // \p{Cc} or \p{Cf}
bool is_whitespace(char32_t c);             // the White_Space property (space, \t, U+00A0, U+3000...)
bool is_nonspacing_mark(char32_t c);        // \p{Mn}: what strip_accents removes
bool is_letter(char32_t c);                 // \p{L}
bool is_number(char32_t c);                 // \p{N}
// A CJK ideograph in the blocks BERT's tokenizer isolates (U+4E00-9FFF, U+3400-4DBF,
// U+20000-2A6DF, U+2A700-2CEAF, U+F900-FAFF, U+2F800-2FA1F).
bool is_cjk_ideograph(char32_t c);

}  // namespace chorus::text
