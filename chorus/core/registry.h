// Registry<T>: Keras class names -> factories that rebuild a T from its get_config(). One
// table per kind of object (layers, losses, metrics, optimizers, learning-rate schedules)
// lets saved models and compile configs be rebuilt, and lets users add their own classes
// (Keras's register_keras_serializable). Thread-safe: a mutex guards the table.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chorus/core/config_reader.h"
#include "chorus/core/error.h"

namespace chorus {

template <class T>
class Registry {
 public:
  // Receives the inner "config" object of {"class_name": ..., "config": {...}}.
  using Factory = std::function<std::shared_ptr<T>(const nlohmann::json& config)>;

  // `kind` names the objects in messages ("layer", "loss", ...).
  Registry(std::string kind, std::map<std::string, Factory> builtins)
      : kind_(std::move(kind)), factories_(std::move(builtins)) {}

  // Makes `class_name` known; registering a name again replaces its factory. Throws
  // ValueError for an empty name or factory, naming `caller`.
  void add(std::string_view caller, std::string class_name, Factory factory) {
    if (class_name.empty()) throw_error<ValueError>("{}: expected a class name, got an empty string", caller);
    if (!factory) throw_error<ValueError>("{}: expected a factory for '{}', got an empty function", caller, class_name);
    std::lock_guard lock(mutex_);
    factories_[std::move(class_name)] = std::move(factory);
  }

  bool contains(const std::string& class_name) const {
    std::lock_guard lock(mutex_);
    return factories_.contains(class_name);
  }

  // The registered class names, sorted.
  std::vector<std::string> names() const {
    std::lock_guard lock(mutex_);
    std::vector<std::string> names;
    for (const auto& [name, factory] : factories_) names.push_back(name);
    return names;
  }

  // A new object from Keras's serialised form {"class_name": ..., "config": {...}}
  // ("module" and "registered_name" are accepted; an absent "config" is {}). Throws
  // ValueError naming `caller` for a malformed or unexpected key, or an unknown class;
  // a factory's JSON type error becomes "<caller>: bad config for <class>: ...".
  std::shared_ptr<T> from_config(std::string_view caller, const nlohmann::json& config) const {
    ConfigReader outer(std::string(caller), config);
    outer.require({"class_name"});
    const std::string class_name = outer.string("class_name", "");
    outer.string("module", "");
    outer.string("registered_name", "");
    const nlohmann::json* inner = outer.find("config");
    outer.finish();
    try {
      return make(caller, class_name, inner != nullptr ? *inner : nlohmann::json::object());
    } catch (const nlohmann::json::exception& e) {
      throw_error<ValueError>("{}: bad config for {}: {}", caller, class_name, e.what());
    }
  }

  // A new object of `class_name` from its config. Throws ValueError naming `caller` and
  // listing the known classes when the class is unknown. The factory runs unlocked: it
  // may build nested objects from this registry.
  std::shared_ptr<T> make(std::string_view caller, const std::string& class_name, const nlohmann::json& config) const {
    Factory factory;
    {
      std::lock_guard lock(mutex_);
      if (auto it = factories_.find(class_name); it != factories_.end()) factory = it->second;
    }
    if (!factory) {
      std::string known;
      for (const std::string& name : names()) known += (known.empty() ? "" : ", ") + name;
      throw_error<ValueError>("{}: unknown {} class '{}'. Known classes: {}", caller, kind_, class_name, known);
    }
    return factory(config);
  }

 private:
  const std::string kind_;
  mutable std::mutex mutex_;
  std::map<std::string, Factory> factories_;
};

// A factory that makes T (a Base) from an options struct read strictly from the config:
// `read_own` (null: T has no keys of its own) reads T's keys, `read_shared` the keys its
// whole family shares, and any other key is a ValueError naming `class_name`.
template <class Base, class T, class Options>
typename Registry<Base>::Factory options_factory(const char* class_name, Options (*read_own)(ConfigReader&),
                                                 void (*read_shared)(Options&, ConfigReader&)) {
  return [=](const nlohmann::json& config) -> std::shared_ptr<Base> {
    ConfigReader reader(class_name, config);
    Options options = read_own != nullptr ? read_own(reader) : Options{};
    read_shared(options, reader);
    reader.finish();
    return std::make_shared<T>(std::move(options));
  };
}

}  // namespace chorus
