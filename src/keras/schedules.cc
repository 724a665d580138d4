// Learning-rate schedules (tf.keras.optimizers.schedules): ExponentialDecay and PiecewiseConstantDecay.
#include <algorithm>
#include <cmath>

#include "lockstep/keras/optimizers.h"

namespace lockstep::keras::optimizers {

ExponentialDecay::ExponentialDecay(ExponentialDecayOptions options) : options_(options) {
  LS_CHECK(options_.decay_steps > 0, ValueError, "ExponentialDecay: decay_steps must be > 0, got ",
           options_.decay_steps);
}

double ExponentialDecay::operator()(int64_t step) const {
  double p = static_cast<double>(step) / static_cast<double>(options_.decay_steps);
  if (options_.staircase) p = std::floor(p);
  return options_.initial_learning_rate * std::pow(options_.decay_rate, p);
}

nlohmann::json ExponentialDecay::get_config() const {
  return {{"initial_learning_rate", options_.initial_learning_rate},
          {"decay_steps", options_.decay_steps},
          {"decay_rate", options_.decay_rate},
          {"staircase", options_.staircase},
          {"name", "ExponentialDecay"}};
}

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  LS_CHECK(values_.size() == boundaries_.size() + 1, ValueError,
           "PiecewiseConstantDecay: the length of values must be the length of boundaries + 1; got ",
           boundaries_.size(), " boundaries and ", values_.size(), " values");
  LS_CHECK(std::is_sorted(boundaries_.begin(), boundaries_.end()), ValueError,
           "PiecewiseConstantDecay: boundaries must be in increasing order");
}

double PiecewiseConstantDecay::operator()(int64_t step) const {
  // The first boundary not below step: TF keeps values[i] up to and including boundaries[i].
  auto it = std::lower_bound(boundaries_.begin(), boundaries_.end(), step);
  return values_[static_cast<size_t>(it - boundaries_.begin())];
}

nlohmann::json PiecewiseConstantDecay::get_config() const {
  return {{"boundaries", boundaries_}, {"values", values_}, {"name", "PiecewiseConstantDecay"}};
}

nlohmann::json LearningRate::to_json() const {
  if (!schedule_) return value_;
  return {{"class_name", schedule_->class_name()}, {"config", schedule_->get_config()}};
}

}  // namespace lockstep::keras::optimizers
