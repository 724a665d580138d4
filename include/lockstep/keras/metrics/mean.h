// keras.metrics.Mean: the weighted mean of values.
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/metrics/metric.h"

namespace lockstep::keras::metrics {

// Weighted mean of values (keras.metrics.Mean). Values of rank > 1 are first averaged per sample (over
// all but the first axis); sample_weight is squeezed or expanded by a trailing size-1 axis, values are
// averaged down to its rank, and it is broadcast to them. State: {total, count}.
class MeanMetric : public Metric {
 public:
  explicit MeanMetric(std::string name = "mean") : Metric(std::move(name), 2) {}
  // Throws ValueError: a Mean takes values, not predictions.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  // update_state(values, sample_weight), then result(): `test_loss(t_loss)`.
  double operator()(const Tensor& values, const Tensor& sample_weight = {});
  double result_of(const std::vector<double>& state) const override;
  std::string class_name() const override { return "Mean"; }
};

std::shared_ptr<MeanMetric> Mean(std::string name = "mean");

}  // namespace lockstep::keras::metrics
