// keras.metrics.Sum: the weighted sum of values.
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/metrics/metric.h"

namespace lockstep::keras::metrics {

// Weighted sum of values (keras.metrics.Sum). State: {total}.
class SumMetric : public Metric {
 public:
  explicit SumMetric(std::string name = "sum") : Metric(std::move(name), 1) {}
  // Throws ValueError: a Sum takes values, not predictions.
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
  void update_state(const Tensor& values, const Tensor& sample_weight = {});
  double operator()(const Tensor& values, const Tensor& sample_weight = {});
  double result_of(const std::vector<double>& state) const override;
  std::string class_name() const override { return "Sum"; }
};

std::shared_ptr<SumMetric> Sum(std::string name = "sum");

}  // namespace lockstep::keras::metrics
