// chorus/recsys: retrieval layers and metrics for recommender models (keras_rs's names).
// One include for all of them.
#pragma once

#include "chorus/recsys/brute_force_retrieval.h"
#include "chorus/recsys/distributed_embedding.h"
#include "chorus/recsys/retrieval_metrics.h"
