// Every optimizer and learning-rate schedule: include this one header for
// chorus::optimizers::{SGD, Adam, AdamW, Adagrad, RMSprop} and
// chorus::optimizers::schedules.
#pragma once

#include "chorus/optimizers/adagrad.h"
#include "chorus/optimizers/adam.h"
#include "chorus/optimizers/adamw.h"
#include "chorus/optimizers/learning_rate.h"
#include "chorus/optimizers/optimizer.h"
#include "chorus/optimizers/rmsprop.h"
#include "chorus/optimizers/schedules.h"
#include "chorus/optimizers/sgd.h"
