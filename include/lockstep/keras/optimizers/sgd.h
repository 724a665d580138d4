// keras.optimizers.SGD: gradient descent, with momentum or Nesterov momentum.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/keras/optimizers/optimizer.h"

namespace lockstep::keras::optimizers {

struct SGDOptions {
  LearningRate learning_rate = 0.01;
  double momentum = 0.0;  // in [0, 1]
  bool nesterov = false;
  std::string name = "SGD";
};

// Factories, so that SGD({.learning_rate = 0.001}) reads like Keras.
std::shared_ptr<Optimizer> SGD(SGDOptions options = {});
// The registry's entry (registry.cc): Keras' arguments, defaults from SGDOptions, and the SGD a complete config
// (every argument of sgd_params() present) describes.
std::vector<Param> sgd_params();
std::shared_ptr<Optimizer> sgd_from_config(const nlohmann::json& config);

}  // namespace lockstep::keras::optimizers
