#include "chorus/core/env.h"

#include <cerrno>
#include <cstdlib>

#include "chorus/core/error.h"

namespace chorus {
namespace {

// $name's text, or nullptr when it is unset or empty.
const char* env_text(const char* name) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? nullptr : text;
}

}  // namespace

std::optional<int64_t> env_integer(const char* name, const char* expected, int64_t min_value, int64_t max_value) {
  const char* text = env_text(name);
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || errno == ERANGE || value < min_value || value > max_value) {
    throw_error<ValueError>("{}: expected {}, got '{}'", name, expected, text);
  }
  return value;
}

std::optional<double> env_positive_number(const char* name, const char* expected) {
  const char* text = env_text(name);
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (*end != '\0' || !(value > 0)) throw_error<ValueError>("{}: expected {}, got '{}'", name, expected, text);
  return value;
}

}  // namespace chorus
