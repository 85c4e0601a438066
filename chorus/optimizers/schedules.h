// Every learning-rate schedule (namespace chorus::optimizers::schedules), and
// schedule_from_config to rebuild one from its config.
#pragma once

#include "chorus/optimizers/learning_rate.h"
#include "chorus/optimizers/schedules/cosine_decay.h"
#include "chorus/optimizers/schedules/exponential_decay.h"
#include "chorus/optimizers/schedules/linear_warmup.h"
#include "chorus/optimizers/schedules/piecewise_constant_decay.h"
#include "chorus/optimizers/schedules/polynomial_decay.h"
#include "chorus/optimizers/schedules/schedule_from_config.h"
