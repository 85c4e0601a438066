// Checks that a family's config round-trip test covers every class its registry knows, so
// a new built-in class cannot skip the strict config reader's round trip. Header-only;
// test threads only.
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace chorus::testing {

// Fails once for each name in `registered` that is in neither `covered` (the classes the
// test round-tripped) nor `user_classes` (the ones other tests register, as a user would;
// they may or may not be registered when this runs).
inline void expect_registry_covered(const std::vector<std::string>& registered, const std::set<std::string>& covered,
                                    const std::set<std::string>& user_classes) {
  for (const std::string& name : registered) {
    if (!covered.contains(name) && !user_classes.contains(name)) {
      ADD_FAILURE() << "registered class " << name << " has no config round-trip case";
    }
  }
}

}  // namespace chorus::testing
