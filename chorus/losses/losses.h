// Every Keras loss chorus has: the Loss base, the loss classes and their functional
// forms (per-sample losses).
#pragma once

#include "chorus/losses/binary_crossentropy.h"
#include "chorus/losses/categorical_crossentropy.h"
#include "chorus/losses/huber.h"
#include "chorus/losses/loss.h"
#include "chorus/losses/mean_absolute_error.h"
#include "chorus/losses/mean_squared_error.h"
#include "chorus/losses/sparse_categorical_crossentropy.h"
