// Keras metrics (tf.keras.metrics): every header under include/lockstep/keras/metrics/, one metric class each (the
// base Metric, Mean, Sum, MeanMetricWrapper), the accuracy and cross-entropy metrics made from MeanMetricWrapper,
// and the registry with compile()'s metric names.
#pragma once
#include "lockstep/keras/metrics/accuracy_metrics.h"
#include "lockstep/keras/metrics/mean.h"
#include "lockstep/keras/metrics/mean_metric_wrapper.h"
#include "lockstep/keras/metrics/metric.h"
#include "lockstep/keras/metrics/probabilistic_metrics.h"
#include "lockstep/keras/metrics/registry.h"
#include "lockstep/keras/metrics/sum.h"
