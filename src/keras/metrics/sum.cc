// keras.metrics.Sum: reduce_to_samplewise_values' weighting, accumulated as {total}.
#include "lockstep/keras/metrics/sum.h"

#include "lockstep/autograd/tape.h"
#include "metrics-impl.h"

namespace lockstep::keras::metrics {

using detail::check_values;
using detail::samplewise;
using detail::throw_takes_values;

void SumMetric::update_state(const Tensor&, const Tensor&, const Tensor&) {
  throw_takes_values(*this);
}

void SumMetric::update_state(const Tensor& values, const Tensor& sample_weight) {
  check_values(*this, values);
  if (values.numel() == 0) return;
  NoGradGuard no_grad;
  accumulate({raw_ops::sum(samplewise(values, sample_weight, /*mean=*/false).first).item<double>()});
}

double SumMetric::operator()(const Tensor& values, const Tensor& sample_weight) {
  update_state(values, sample_weight);
  return result();
}

double SumMetric::result_of(const std::vector<double>& state) const {
  return state.at(0);
}

std::shared_ptr<SumMetric> Sum(std::string name) {
  return std::make_shared<SumMetric>(std::move(name));
}

}  // namespace lockstep::keras::metrics
