// tf.strings semantics on std::string. Decoding and case mapping go through unicode.h (ICU);
// number parsing through std::from_chars, which is locale-independent.
#include "chorus/text/strings.h"

#include <algorithm>
#include <charconv>
#include <system_error>
#include <type_traits>

#include "chorus/core/error.h"
#include "chorus/text/unicode.h"

namespace chorus::text::strings {
namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

// The byte offset of code point `index` of `text` (text.size() for index == count).
size_t byte_offset(std::string_view text, int64_t index) {
  size_t pos = 0;
  for (int64_t i = 0; i < index && pos < text.size(); ++i) decode_utf8(text, pos);
  return pos;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float32";
  if constexpr (std::is_same_v<T, double>) return "float64";
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  return "int64";
}

}  // namespace

int64_t length(std::string_view text, Unit unit) {
  return unit == Unit::kByte ? static_cast<int64_t>(text.size()) : utf8_length(text);
}

std::string lower(std::string_view text, Encoding encoding) {
  if (encoding == Encoding::kUtf8) return to_lower(text);
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string upper(std::string_view text, Encoding encoding) {
  if (encoding == Encoding::kUtf8) return to_upper(text);
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_ascii_space(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !is_ascii_space(text[i])) ++i;
    if (i > start) out.emplace_back(text.substr(start, i - start));
  }
  return out;
}

std::vector<std::string> split(std::string_view text, std::string_view sep, int64_t maxsplit) {
  if (sep.empty()) throw_error<ValueError>("split: expected a non-empty separator. Received: sep=\"\"");
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (int64_t splits = 0; maxsplit < 0 || splits < maxsplit; ++splits) {
    const size_t found = text.find(sep, start);
    if (found == std::string_view::npos) break;
    out.emplace_back(text.substr(start, found - start));
    start = found + sep.size();
  }
  out.emplace_back(text.substr(start));
  return out;
}

std::string join(const std::vector<std::string>& pieces, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) out.append(separator);
    out.append(pieces[i]);
  }
  return out;
}

std::string substr(std::string_view text, int64_t pos, int64_t len, Unit unit) {
  const int64_t size = length(text, unit);
  if (pos < -size || pos > size) {
    throw_error<IndexError>("substr: pos {} out of range for a string of {} {}", pos, size,
                            unit == Unit::kByte ? "bytes" : "characters");
  }
  if (len < 0) throw_error<ValueError>("substr: expected len >= 0. Received: len={}", len);
  const int64_t begin = pos < 0 ? size + pos : pos;
  const int64_t end = std::min(size, begin + len);
  if (unit == Unit::kByte) return std::string(text.substr(static_cast<size_t>(begin), static_cast<size_t>(end - begin)));
  const size_t b = byte_offset(text, begin);
  const size_t e = b + byte_offset(text.substr(b), end - begin);
  return std::string(text.substr(b, e - b));
}

template <class T>
T to_number(std::string_view text) {
  size_t b = 0;
  size_t e = text.size();
  while (b < e && is_ascii_space(text[b])) ++b;
  while (e > b && is_ascii_space(text[e - 1])) --e;
  std::string_view s = text.substr(b, e - b);
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);  // from_chars rejects a leading '+'
  T value{};
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) {
    throw_error<ValueError>("to_number: cannot parse \"{}\" as {}", text, type_name<T>());
  }
  return value;
}

template float to_number<float>(std::string_view);
template double to_number<double>(std::string_view);
template int32_t to_number<int32_t>(std::string_view);
template int64_t to_number<int64_t>(std::string_view);

}  // namespace chorus::text::strings
