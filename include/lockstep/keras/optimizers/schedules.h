// Learning-rate schedules (tf.keras.optimizers.schedules): a learning rate as a function of the optimizer's step.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/keras/registry.h"

namespace lockstep::keras::optimizers {

// A learning rate as a function of the optimizer's step (tf.keras.optimizers.schedules).
class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  virtual double operator()(int64_t step) const = 0;
  virtual nlohmann::json get_config() const = 0;
  // The Keras class name, written next to get_config() when an optimizer's config is saved.
  virtual std::string class_name() const { return "LearningRateSchedule"; }
};

struct ExponentialDecayOptions {
  double initial_learning_rate = 0.01;
  int64_t decay_steps = 1;  // must be > 0
  double decay_rate = 1.0;
  bool staircase = false;  // true: decay at whole multiples of decay_steps only
};
// initial_learning_rate * decay_rate ^ (step / decay_steps), the exponent floored when staircase.
class ExponentialDecay : public LearningRateSchedule {
 public:
  explicit ExponentialDecay(ExponentialDecayOptions options);
  double operator()(int64_t step) const override;
  nlohmann::json get_config() const override;
  std::string class_name() const override { return "ExponentialDecay"; }

 private:
  ExponentialDecayOptions options_;
};

// values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <= boundaries[i], and
// values.back() after the last boundary. values.size() must be boundaries.size() + 1.
class PiecewiseConstantDecay : public LearningRateSchedule {
 public:
  PiecewiseConstantDecay(std::vector<int64_t> boundaries, std::vector<double> values);
  double operator()(int64_t step) const override;
  nlohmann::json get_config() const override;
  std::string class_name() const override { return "PiecewiseConstantDecay"; }

 private:
  std::vector<int64_t> boundaries_;
  std::vector<double> values_;
};

// Keras spells them keras.optimizers.schedules.*.
namespace schedules {
using optimizers::ExponentialDecay;
using optimizers::LearningRateSchedule;
using optimizers::PiecewiseConstantDecay;
// Every schedule lockstep has, by Keras class name.
const Registry<std::shared_ptr<LearningRateSchedule>>& registry();
}  // namespace schedules

}  // namespace lockstep::keras::optimizers
