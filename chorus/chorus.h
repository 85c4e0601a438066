// The one header a chorus program includes.
#pragma once

#include "chorus/autograd/tape.h"
#include "chorus/autograd/variable.h"
#include "chorus/callbacks/callbacks.h"
#include "chorus/core/creation.h"
#include "chorus/core/ragged_tensor.h"
#include "chorus/core/random.h"
#include "chorus/core/tensor.h"
#include "chorus/core/tree.h"
#include "chorus/data/auto_shard.h"
#include "chorus/data/csv.h"
#include "chorus/data/dataset.h"
#include "chorus/data/download.h"
#include "chorus/data/idx.h"
#include "chorus/data/mnist.h"
#include "chorus/data/movielens.h"
#include "chorus/data/text_line_dataset.h"
#include "chorus/distribute/distribute.h"
#include "chorus/layers/layers.h"
#include "chorus/losses/losses.h"
#include "chorus/metrics/metrics.h"
#include "chorus/mixed_precision/dtype_policy.h"
#include "chorus/models/models.h"
#include "chorus/ops/ops.h"
#include "chorus/optimizers/optimizers.h"
#include "chorus/recsys/recsys.h"
#include "chorus/text/text.h"

namespace chorus {

// Keras's top-level names: keras.Model, keras.Sequential, keras.Input, keras.models.load_model.
using layers::Input;
using models::load_model;
using models::Model;
using models::Sequential;

}  // namespace chorus
