// The metric registry: every metric by Keras class name and short name, and compile()'s metric names.
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/metrics/metric.h"
#include "lockstep/keras/registry.h"

namespace lockstep::keras::metrics {

// Every metric class lockstep has, by Keras class name, with Keras' short names ("sparse_categorical_accuracy").
const Registry<std::shared_ptr<Metric>>& registry();

// A metric from its compile() name. "accuracy"/"acc" (named as given) follows the loss, by its name():
// sparse_categorical_crossentropy -> SparseCategoricalAccuracy, categorical_crossentropy ->
// CategoricalAccuracy, binary_crossentropy -> BinaryAccuracy; for any other or no loss it follows the
// shapes of each batch as Keras does: y_pred's last axis 1 -> binary, y_true of lower rank (or last axis 1)
// -> sparse categorical, else categorical. Other names are registry()'s: a short name (any case) or a class name,
// with default options. Unknown names raise ValueError listing the short names.
std::shared_ptr<Metric> get(const std::string& identifier, const std::string& loss_name = "");

}  // namespace lockstep::keras::metrics
