// Shared<Base>: a shared, polymorphic handle to a Base (an optimizer, loss, metric,
// callback or layer) that an options struct can be filled with by value:
// `.optimizer = Adam(1e-3)` moves the Adam into the handle, `.optimizer = "adam"` asks
// Base::from_name, and a std::shared_ptr<Derived> shares an object the caller keeps.
// Copies share the object. Not synchronised: the object is used by one thread at a time.
#pragma once

#include <concepts>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

namespace chorus {

template <class Base>
class Shared {
 public:
  Shared() = default;
  template <class Derived>
    requires std::derived_from<std::remove_cvref_t<Derived>, Base> &&
             (!std::is_lvalue_reference_v<Derived>)
  Shared(Derived&& object)  // NOLINT: implicit by design
      : ptr_(std::make_shared<std::remove_cvref_t<Derived>>(std::move(object))) {}
  template <class Derived>
    requires std::derived_from<Derived, Base>
  Shared(std::shared_ptr<Derived> object) : ptr_(std::move(object)) {}  // NOLINT
  // A Keras string name ("adam", "mse", "accuracy"); Base::from_name throws ValueError
  // listing the names it knows.
  Shared(std::string_view name)  // NOLINT
    requires requires { Base::from_name(name); }
      : ptr_(Base::from_name(name)) {}
  Shared(const char* name)  // NOLINT
    requires requires { Base::from_name(std::string_view(name)); }
      : ptr_(Base::from_name(name)) {}
  Shared(const std::string& name)  // NOLINT
    requires requires { Base::from_name(std::string_view(name)); }
      : ptr_(Base::from_name(name)) {}

  explicit operator bool() const { return ptr_ != nullptr; }
  Base* get() const { return ptr_.get(); }
  Base& operator*() const { return *ptr_; }
  Base* operator->() const { return ptr_.get(); }
  const std::shared_ptr<Base>& shared_ptr() const { return ptr_; }

 private:
  std::shared_ptr<Base> ptr_;
};

}  // namespace chorus
