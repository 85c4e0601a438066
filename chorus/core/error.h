// chorus::Error and its subclasses: the exceptions every part of chorus throws for bad
// input. Messages name the op, layer, file:line or rank and say what was expected and
// what was found (DESIGN.md §5). Immutable; safe to copy across threads.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace chorus {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A shape that an op or layer cannot accept (wrong rank, dims that do not broadcast).
class ShapeError : public Error {
  using Error::Error;
};

// A dtype that an op cannot accept, or two operands whose dtypes differ.
class DTypeError : public Error {
  using Error::Error;
};

// An index out of range: a gather index, an axis, a slice bound.
class IndexError : public Error {
  using Error::Error;
};

// Any other bad argument value (a negative size, an empty list where one is needed).
class ValueError : public Error {
  using Error::Error;
};

// A file or network resource that cannot be read, parsed or written: the message names
// the file and the line or byte offset (`u.data:5121: expected 4 tab-separated fields, found 3`).
class IOError : public Error {
  using Error::Error;
};

// A device's memory limit would be exceeded (TensorFlow's ResourceExhaustedError): the
// message names the device, the bytes needed and the limit.
class ResourceExhaustedError : public Error {
  using Error::Error;
};

// Throws E with a message formatted by fmt: `throw_error<ShapeError>("{}: ...", op)`.
template <class E = Error, class... Args>
[[noreturn]] void throw_error(fmt::format_string<Args...> format, Args&&... args) {
  throw E(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace chorus
