// The names most tests use unqualified — gmock's matchers for values and error messages,
// and test_util.h's tensor helpers: a test says `using namespace testing::test_names;` in
// its anonymous namespace once, instead of a using-declaration per name in every file.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testing/test_util.h"

namespace chorus::testing::test_names {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StrEq;
using ::testing::ThrowsMessage;
using ::testing::UnorderedElementsAre;
using chorus::testing::expect_gradients_match;
using chorus::testing::random_tensor;
using chorus::testing::same_bits;
using chorus::testing::tensor_of;
using chorus::testing::tensors_near;

}  // namespace chorus::testing::test_names
