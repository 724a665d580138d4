// Keras' probabilistic metrics: keras.metrics.SparseCategoricalCrossentropy, the mean of the loss.
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/metrics/metric.h"

namespace lockstep::keras::metrics {

// An options struct rather than (from_logits, name), so that a name is never taken for the bool.
struct SparseCategoricalCrossentropyOptions {
  bool from_logits = false;
  std::string name = "sparse_categorical_crossentropy";
};
// The mean of losses::sparse_categorical_crossentropy.
std::shared_ptr<Metric> SparseCategoricalCrossentropy(SparseCategoricalCrossentropyOptions options = {});

}  // namespace lockstep::keras::metrics
