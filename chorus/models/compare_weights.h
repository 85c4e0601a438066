// How far apart two models' weights are, for checking that a distributed run reproduces
// one device's (examples, tests, benchmarks).
#pragma once

#include <vector>

#include "chorus/autograd/variable.h"

namespace chorus::models {

// The largest |x - y| / max(|x|, |y|, 1e-3) over the elements of matching variables.
// Throws ValueError when the lists differ in length or two matching variables in shape.
double max_relative_difference(const std::vector<autograd::Variable>& a, const std::vector<autograd::Variable>& b);

}  // namespace chorus::models
