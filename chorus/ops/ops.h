// The op set: everything a model computes with (Keras `ops` names), plus the arithmetic
// operators on Tensor.
#pragma once

#include "chorus/ops/attention.h"
#include "chorus/ops/axes.h"
#include "chorus/ops/elementwise.h"
#include "chorus/ops/matmul.h"
#include "chorus/ops/operators.h"
#include "chorus/ops/reduction.h"
#include "chorus/ops/shape_ops.h"
