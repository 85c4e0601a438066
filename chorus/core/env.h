// Numeric settings from environment variables (CHORUS_*), parsed strictly: a malformed
// value is a ValueError naming the variable and its text, never a silent default.
// Thread-safe as long as nothing calls setenv at the same time.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace chorus {

// The integer in $name, or nullopt when it is unset or empty. Throws ValueError unless
// the whole text is an integer in [min_value, max_value]; `expected` describes the range
// in the message ("NAME: expected <expected>, got 'TEXT'").
std::optional<int64_t> env_integer(const char* name, const char* expected, int64_t min_value,
                                   int64_t max_value = std::numeric_limits<int64_t>::max());

// The number in $name, or nullopt when it is unset or empty. Throws ValueError unless
// the whole text is a number > 0.
std::optional<double> env_positive_number(const char* name, const char* expected);

}  // namespace chorus
