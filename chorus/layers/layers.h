// Every built-in layer (keras.layers, preprocessing layers included), the Layer base, activations,
// initializers and the registry: one include for model code.
#pragma once

#include "chorus/layers/activation.h"
#include "chorus/layers/activations.h"
#include "chorus/layers/add.h"
#include "chorus/layers/batch_normalization.h"
#include "chorus/layers/concatenate.h"
#include "chorus/layers/dense.h"
#include "chorus/layers/dropout.h"
#include "chorus/layers/embedding.h"
#include "chorus/layers/flatten.h"
#include "chorus/layers/initializers.h"
#include "chorus/layers/input_layer.h"
#include "chorus/layers/layer.h"
#include "chorus/layers/layer_normalization.h"
#include "chorus/layers/preprocessing/hashing.h"
#include "chorus/layers/preprocessing/integer_lookup.h"
#include "chorus/layers/preprocessing/normalization.h"
#include "chorus/layers/preprocessing/string_lookup.h"
#include "chorus/layers/preprocessing/text_vectorization.h"
#include "chorus/layers/registry.h"
#include "chorus/layers/reshape.h"
