// Keras' accuracy metrics (keras.metrics.*Accuracy): per-sample match functions and the metrics averaging them.
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/metrics/metric.h"

namespace lockstep::keras::metrics {

// ---- per-sample functions (keras.metrics.*_accuracy), float64 results of 1 (match) or 0 ----
// y_true == y_pred elementwise (y_true cast to y_pred's dtype).
Tensor accuracy(const Tensor& y_true, const Tensor& y_pred);
// y_true == argmax(y_pred, -1); y_true class indices [N] or [N, 1], any dtype.
Tensor sparse_categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);
// argmax(y_true, -1) == argmax(y_pred, -1).
Tensor categorical_accuracy(const Tensor& y_true, const Tensor& y_pred);
// y_true == (y_pred > threshold).
Tensor binary_accuracy(const Tensor& y_true, const Tensor& y_pred, double threshold = 0.5);

std::shared_ptr<Metric> Accuracy(std::string name = "accuracy");
std::shared_ptr<Metric> SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy");
std::shared_ptr<Metric> CategoricalAccuracy(std::string name = "categorical_accuracy");
std::shared_ptr<Metric> BinaryAccuracy(std::string name = "binary_accuracy", double threshold = 0.5);

}  // namespace lockstep::keras::metrics
