// tf.strings-named functions on std::string values: length, lower, upper, split, join,
// substr, to_number. Pure functions; thread-safe. UTF-8 units decode strictly (invalid
// UTF-8 is a ValueError naming the byte offset, see unicode.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace chorus::text::strings {

// What a position or length counts: bytes (tf.strings' "BYTE") or code points ("UTF8_CHAR").
enum class Unit { kByte, kUtf8Char };

// tf.strings.length: the number of bytes or code points of `text`.
int64_t length(std::string_view text, Unit unit = Unit::kByte);

// tf.strings.lower/upper. With kAscii (TensorFlow's default, encoding='') only A-Z/a-z
// change and other bytes pass through; with kUtf8 the full Unicode mapping applies.
enum class Encoding { kAscii, kUtf8 };
std::string lower(std::string_view text, Encoding encoding = Encoding::kAscii);
std::string upper(std::string_view text, Encoding encoding = Encoding::kAscii);

// tf.strings.split without sep: the runs of non-whitespace (ASCII space, \t \n \v \f \r);
// leading, trailing and repeated whitespace make no empty pieces.
std::vector<std::string> split(std::string_view text);
// tf.strings.split with sep: every piece between occurrences of `sep`, empty ones kept
// ("a,,b" -> {"a", "", "b"}); at most `maxsplit` splits when maxsplit >= 0. An empty
// text gives no pieces. Throws ValueError for an empty `sep`.
std::vector<std::string> split(std::string_view text, std::string_view sep, int64_t maxsplit = -1);

// tf.strings.join of one list: the pieces with `separator` between them.
std::string join(const std::vector<std::string>& pieces, std::string_view separator = "");

// tf.strings.substr: `len` units from `pos`; a negative pos counts from the end; the
// length is clipped at the end of the string. Throws IndexError when pos lies outside
// [-size, size], naming pos and the size.
std::string substr(std::string_view text, int64_t pos, int64_t len, Unit unit = Unit::kByte);

// tf.strings.to_number: parses a float32/float64/int32/int64 after trimming ASCII
// whitespace. Throws ValueError quoting the text and the type (`to_number: cannot parse
// "12x" as int32`), also when an integer is out of the type's range.
template <class T = float>
T to_number(std::string_view text);

}  // namespace chorus::text::strings
