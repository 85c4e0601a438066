// Every Keras metric chorus has: the Metric base and the metric classes.
#pragma once

#include "chorus/metrics/accuracy.h"
#include "chorus/metrics/binary_accuracy.h"
#include "chorus/metrics/categorical_accuracy.h"
#include "chorus/metrics/mean.h"
#include "chorus/metrics/mean_absolute_error.h"
#include "chorus/metrics/mean_metric_wrapper.h"
#include "chorus/metrics/mean_squared_error.h"
#include "chorus/metrics/metric.h"
#include "chorus/metrics/sparse_categorical_accuracy.h"
#include "chorus/metrics/sparse_top_k_categorical_accuracy.h"
#include "chorus/metrics/sum.h"
#include "chorus/metrics/top_k_categorical_accuracy.h"
