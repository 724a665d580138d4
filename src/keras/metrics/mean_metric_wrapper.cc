// MeanMetricWrapper: a per-sample function's values accumulated as Mean's, outside any GradientTape.
#include "lockstep/keras/metrics/mean_metric_wrapper.h"

#include "lockstep/autograd/tape.h"
#include "metrics-impl.h"

namespace lockstep::keras::metrics {

using detail::mean_of_batch;
using detail::mean_result;

MeanMetricWrapper::MeanMetricWrapper(Fn fn, std::string name, nlohmann::json config, std::string class_name)
    : Metric(std::move(name), 2), fn_(std::move(fn)), config_(std::move(config)), class_name_(std::move(class_name)) {}

void MeanMetricWrapper::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  LS_CHECK(y_true.defined() && y_pred.defined(), ValueError, "metric '", name(),
           "': update_state needs defined y_true and y_pred");
  if (y_true.numel() == 0 || y_pred.numel() == 0) return;
  NoGradGuard no_grad;
  const Tensor values = fn_(y_true, y_pred);
  if (values.numel() > 0) accumulate(mean_of_batch(values, sample_weight));
}

double MeanMetricWrapper::result_of(const std::vector<double>& state) const {
  return mean_result(state);
}

nlohmann::json MeanMetricWrapper::get_config() const {
  nlohmann::json c = Metric::get_config();
  c.update(config_);
  return c;
}

}  // namespace lockstep::keras::metrics
