// keras.metrics.Mean: reduce_to_samplewise_values' weighting, accumulated as {total, count}.
#include "lockstep/keras/metrics/mean.h"

#include "lockstep/autograd/tape.h"
#include "metrics-impl.h"

namespace lockstep::keras::metrics {

using detail::check_values;
using detail::mean_of_batch;
using detail::mean_result;
using detail::throw_takes_values;

void MeanMetric::update_state(const Tensor&, const Tensor&, const Tensor&) {
  throw_takes_values(*this);
}

void MeanMetric::update_state(const Tensor& values, const Tensor& sample_weight) {
  check_values(*this, values);
  if (values.numel() == 0) return;
  NoGradGuard no_grad;
  accumulate(mean_of_batch(values, sample_weight));
}

double MeanMetric::operator()(const Tensor& values, const Tensor& sample_weight) {
  update_state(values, sample_weight);
  return result();
}

double MeanMetric::result_of(const std::vector<double>& state) const {
  return mean_result(state);
}

std::shared_ptr<MeanMetric> Mean(std::string name) {
  return std::make_shared<MeanMetric>(std::move(name));
}

}  // namespace lockstep::keras::metrics
