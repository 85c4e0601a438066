// UTF-8 validation for readers that turn file bytes into string tensors (text lines, CSV
// text columns): they refuse invalid text at its file:line rather than pass it on to the
// tokenizers. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace chorus::data {

// The byte offset of the first byte of `text` that does not start or continue a valid
// UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF),
// or nullopt when all of `text` is valid.
std::optional<size_t> find_invalid_utf8(std::string_view text);

}  // namespace chorus::data
