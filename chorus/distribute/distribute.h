// Umbrella header for chorus/distribute: devices, Keras's distribution API and
// tf.distribute's MirroredStrategy.
#pragma once

#include "chorus/distribute/devices.h"
#include "chorus/distribute/distribution.h"
#include "chorus/distribute/layout_map.h"
#include "chorus/distribute/model_parallel.h"
#include "chorus/distribute/mirrored_strategy.h"
#include "chorus/distribute/multi_worker_mirrored_strategy.h"
#include "chorus/distribute/worker_group.h"
