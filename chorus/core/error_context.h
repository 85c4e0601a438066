// with_error_context: adds where an error happened (a file, a config field) in front of
// a chorus::Error's message while keeping its class, for readers that call code which
// cannot know the file it is reading. Stateless; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "chorus/core/error.h"

namespace chorus {

// Returns f(). A chorus::Error it throws is thrown again as the same class (ShapeError,
// DTypeError, IndexError, ValueError, IOError; other subclasses become Error) with the
// message "<context>: <message>".
template <class F>
auto with_error_context(std::string_view context, F&& f) -> decltype(f()) {
  const auto prefixed = [&](const Error& e) { return std::string(context) + ": " + e.what(); };
  try {
    return std::forward<F>(f)();
  } catch (const ShapeError& e) {
    throw ShapeError(prefixed(e));
  } catch (const DTypeError& e) {
    throw DTypeError(prefixed(e));
  } catch (const IndexError& e) {
    throw IndexError(prefixed(e));
  } catch (const ValueError& e) {
    throw ValueError(prefixed(e));
  } catch (const IOError& e) {
    throw IOError(prefixed(e));
  } catch (const Error& e) {
    throw Error(prefixed(e));
  }
}

}  // namespace chorus
