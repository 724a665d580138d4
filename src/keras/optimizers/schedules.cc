// Learning-rate schedules (tf.keras.optimizers.schedules): ExponentialDecay and PiecewiseConstantDecay, their
// registry, and a learning rate (number or schedule) to and from JSON.
#include <algorithm>
#include <cmath>

#include "../keras-impl.h"
#include "lockstep/keras/optimizers/optimizer.h"

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

LearningRate LearningRate::from_json(const nlohmann::json& json) {
  if (json.is_number()) return json.get<double>();
  return schedules::registry().from_config(json.at("class_name").get<std::string>(), json.at("config"));
}

const Registry<std::shared_ptr<LearningRateSchedule>>& schedules::registry() {
  static const Registry<std::shared_ptr<LearningRateSchedule>> r(
      "learning-rate schedule",
      {{"ExponentialDecay",
        [](const nlohmann::json& c) {
          return std::make_shared<ExponentialDecay>(
              ExponentialDecayOptions{.initial_learning_rate = c.at("initial_learning_rate").get<double>(),
                                      .decay_steps = detail::json_int(c.at("decay_steps"), "decay_steps"),
                                      .decay_rate = c.at("decay_rate").get<double>(),
                                      .staircase = c.at("staircase").get<bool>()});
        },
        {},
        {{"initial_learning_rate", kRequired, "the rate at step 0"},
         {"decay_steps", kRequired, "the steps over which the rate is multiplied by decay_rate"},
         {"decay_rate", kRequired, "the factor every decay_steps steps"},
         {"staircase", false, "decay in whole steps of decay_steps"},
         {"name", "ExponentialDecay", "the schedule's name"}}},
       {"PiecewiseConstantDecay",
        [](const nlohmann::json& c) {
          return std::make_shared<PiecewiseConstantDecay>(detail::json_ints(c.at("boundaries"), "boundaries"),
                                                          c.at("values").get<std::vector<double>>());
        },
        {},
        {{"boundaries", kRequired, "the steps where the rate changes, increasing"},
         {"values", kRequired, "the rates: one more than the boundaries"},
         {"name", "PiecewiseConstant", "the schedule's name"}}}});
  return r;
}

}  // namespace lockstep::keras::optimizers
