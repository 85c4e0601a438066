// fit(class_weight=...): Keras's per-class loss weights, made into each training batch's
// sample weights. Stateless; the returned Dataset holds a copy of the weights.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <map>

#include "chorus/core/tensor.h"
#include "chorus/data/dataset.h"

namespace chorus::python {

using ClassWeights = std::map<int64_t, float>;

// The weights of a Python dict {class index: weight}. Throws TypeError naming a bad entry.
ClassWeights class_weights_of(const pybind11::dict& class_weight);

// Keras's rule: the class of a row is its label (rounded), or the argmax of a one-hot
// row; a class missing from `weights` weighs 1. Returns float32 (rows,). Throws ValueError
// when `y` has no rows axis.
Tensor sample_weights_of(const Tensor& y, const ClassWeights& weights);

// (x, y) batches as (x, y, sample weights). Throws, as each batch comes, ValueError where
// a batch already has sample weights or y is not one tensor (a model of several outputs).
data::Dataset with_class_weights(const data::Dataset& batches, const ClassWeights& weights);

}  // namespace chorus::python
