// Every built-in layer (Keras's keras.layers), the Layer base, activations,
// initializers and the registry: one include for model code.
#pragma once

#include "chorus/layers/activation.h"
#include "chorus/layers/activations.h"
#include "chorus/layers/add.h"
#include "chorus/layers/batch_normalization.h"
#include "chorus/layers/concatenate.h"
#include "chorus/layers/dense.h"
#include "chorus/layers/dropout.h"
#include "chorus/layers/einsum_dense.h"
#include "chorus/layers/embedding.h"
#include "chorus/layers/flatten.h"
#include "chorus/layers/initializers.h"
#include "chorus/layers/input_layer.h"
#include "chorus/layers/layer.h"
#include "chorus/layers/layer_normalization.h"
#include "chorus/layers/multi_head_attention.h"
#include "chorus/layers/registry.h"
#include "chorus/layers/reshape.h"
#include "chorus/layers/transformer_encoder.h"
