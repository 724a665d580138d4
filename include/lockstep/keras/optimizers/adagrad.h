// keras.optimizers.Adagrad: each weight's step scaled by the root of the sum of its squared gradients so far.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/keras/optimizers/optimizer.h"

namespace lockstep::keras::optimizers {

struct AdagradOptions {
  LearningRate learning_rate = 0.001;
  double initial_accumulator_value = 0.1;  // where every accumulator starts; >= 0
  double epsilon = 1e-7;                   // added to the accumulator, under the square root
  std::string name = "Adagrad";
};

std::shared_ptr<Optimizer> Adagrad(AdagradOptions options = {});
// The registry's entry (registry.cc): Keras' arguments, defaults from AdagradOptions, and the Adagrad a complete
// config describes.
std::vector<Param> adagrad_params();
std::shared_ptr<Optimizer> adagrad_from_config(const nlohmann::json& config);

}  // namespace lockstep::keras::optimizers
