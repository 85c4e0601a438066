// Umbrella header for chorus/distribute: devices, Keras's distribution API and
// tf.distribute's MirroredStrategy.
#pragma once

#include "chorus/cluster/worker_group.h"
#include "chorus/core/devices.h"
#include "chorus/distribute/mirrored_strategy.h"
#include "chorus/distribute/multi_worker_mirrored_strategy.h"
#include "chorus/distribution/distribution.h"
#include "chorus/distribution/initialize.h"
#include "chorus/distribution/layout_map.h"
#include "chorus/distribution/model_parallel.h"
