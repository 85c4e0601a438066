// ConfigReader: the one strict reader of Keras-style config objects ({"units": 10, ...})
// that every family's from_config uses (layers, losses, metrics, optimizers, schedules,
// initializers). It borrows the config; one reader per config, on one thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/error.h"

namespace chorus {

// Whether `value` is a JSON value of T's kind that T holds exactly: json's get<T>() would
// truncate 10.7 to an integer and wrap 2^63 or -1 into an unsigned. An integer accepts an
// integral float (10.0): Keras configs edited by hand or written by JavaScript have them.
template <class T>
bool config_type_matches(const nlohmann::json& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    if (value.is_number_unsigned()) return value.get<uint64_t>() <= uint64_t{std::numeric_limits<T>::max()};
    if (value.is_number_integer()) {  // a negative integer
      if constexpr (std::is_signed_v<T>) return value.get<int64_t>() >= int64_t{std::numeric_limits<T>::min()};
      return false;
    }
    if (!value.is_number_float()) return false;
    const double d = value.get<double>();
    // Below 2^digits (exact in a double), and within T.
    return std::floor(d) == d && d >= static_cast<double>(std::numeric_limits<T>::min()) &&
           d < std::ldexp(1.0, std::numeric_limits<T>::digits);
  } else if constexpr (std::is_floating_point_v<T>) {
    return value.is_number();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value.is_string();
  } else {  // std::vector<E>
    if (!value.is_array()) return false;
    for (const nlohmann::json& item : value) {
      if (!config_type_matches<typename T::value_type>(item)) return false;
    }
    return true;
  }
}

// What a value of T is called in messages: "an integer", "a list of numbers".
template <class T>
std::string config_type_name() {
  if constexpr (std::is_same_v<T, bool>) return "a boolean";
  else if constexpr (std::is_integral_v<T>) return std::is_signed_v<T> ? "an integer" : "a non-negative integer";
  else if constexpr (std::is_floating_point_v<T>) return "a number";
  else if constexpr (std::is_same_v<T, std::string>) return "a string";
  else return "a list of (" + config_type_name<typename T::value_type>() + ")";
}

// Reads a config's fields with typed defaults and rejects the keys that no accessor asked
// for, so a typo in a saved config is an error instead of a silently ignored setting (as
// Keras 3 raises on an unexpected constructor argument). Every message starts with the
// owner (the class name): one format for the whole library,
//   Dense: unexpected config key 'unitz' (did you mean 'units'?)
//   Dense: config key 'units': expected an integer, got "ten" (a string)
//   Adam: use_ema=true is not supported
// Each accessor marks its key as known, present or not; finish() checks the rest.
class ConfigReader {
 public:
  // `config` must outlive the reader. Throws ValueError if it is not an object.
  ConfigReader(std::string owner, const nlohmann::json& config);

  const std::string& owner() const { return owner_; }
  // Whether `key` is present (null counts as present). Does not mark it known.
  bool has(const std::string& key) const;
  // Throws ValueError naming the first of `keys` that the config lacks.
  void require(std::initializer_list<const char*> keys) const;

  // The value at `key` as T, or `fallback` when absent or null. Throws ValueError
  // (wrong_type) when the value is not a T or does not fit one.
  template <class T>
  T value(const std::string& key, T fallback) {
    const nlohmann::json* found = find(key);
    if (found == nullptr || found->is_null()) return fallback;
    if (!config_type_matches<T>(*found)) wrong_type(key, config_type_name<T>());
    return found->get<T>();
  }
  // As value(), but absent or null gives nullopt.
  template <class T>
  std::optional<T> optional(const std::string& key) {
    const nlohmann::json* found = find(key);
    if (found == nullptr || found->is_null()) return std::nullopt;
    return value<T>(key, T{});
  }
  double number(const std::string& key, double fallback) { return value<double>(key, fallback); }
  int64_t integer(const std::string& key, int64_t fallback) { return value<int64_t>(key, fallback); }
  bool boolean(const std::string& key, bool fallback) { return value<bool>(key, fallback); }
  std::string string(const std::string& key, const std::string& fallback) { return value<std::string>(key, fallback); }
  std::optional<double> optional_number(const std::string& key) { return optional<double>(key); }

  // The raw value at `key`, or nullptr when absent; valid while the config lives. For
  // nested configs (an initializer) and values of several types.
  const nlohmann::json* find(const std::string& key);
  // The raw value at `key`. REQUIRES: has(key).
  const nlohmann::json& raw(const std::string& key);

  // Keys Keras writes that chorus has no use for but accepts with any value.
  void accept(std::initializer_list<const char*> keys);
  // Keys of features chorus does not implement: accepted absent, null or equal to `inert`
  // (Keras's default), refused otherwise ("Dense: kernel_regularizer={...} is not supported").
  void accept_inert(std::initializer_list<const char*> keys, const nlohmann::json& inert = nullptr);

  // Throws ValueError naming the first key no accessor asked for, with the closest known
  // key when one is a likely typo.
  void finish() const;

  // Throws ValueError: "<owner>: config key '<key>': expected <expected>, got <value> (<type>)".
  [[noreturn]] void wrong_type(const std::string& key, const std::string& expected) const;
  // Throws ValueError: "<owner>: <key>=<value> is not supported".
  [[noreturn]] void unsupported(const std::string& key) const;

 private:
  std::string owner_;
  const nlohmann::json& config_;
  std::set<std::string> known_;
};

}  // namespace chorus
