// The one header a chorus program includes.
#pragma once

#include "chorus/autograd/tape.h"
#include "chorus/autograd/variable.h"
#include "chorus/core/creation.h"
#include "chorus/core/random.h"
#include "chorus/core/tensor.h"
#include "chorus/core/tree.h"
#include "chorus/ops/ops.h"
