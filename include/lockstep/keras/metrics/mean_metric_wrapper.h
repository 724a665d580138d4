// Keras' MeanMetricWrapper: the weighted mean of a per-sample function of y_true and y_pred.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/keras/metrics/metric.h"

namespace lockstep::keras::metrics {

// The mean of fn(y_true, y_pred) over all samples, weighted by sample_weight (Keras' MeanMetricWrapper):
// the form of every accuracy and of the cross-entropy metric. `config` holds fn's options for get_config(),
// `class_name` the Keras class it stands for. State: {total, count}, as Mean's.
class MeanMetricWrapper : public Metric {
 public:
  using Fn = std::function<Tensor(const Tensor& y_true, const Tensor& y_pred)>;
  MeanMetricWrapper(Fn fn, std::string name, nlohmann::json config = nlohmann::json::object(),
                    std::string class_name = "MeanMetricWrapper");
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight = {}) override;
  double result_of(const std::vector<double>& state) const override;
  nlohmann::json get_config() const override;
  std::string class_name() const override { return class_name_; }

 private:
  Fn fn_;
  nlohmann::json config_;
  std::string class_name_;
};

}  // namespace lockstep::keras::metrics
