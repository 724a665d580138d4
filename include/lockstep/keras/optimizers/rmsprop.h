// keras.optimizers.RMSprop: steps scaled by a moving average of squared gradients.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lockstep/keras/optimizers/optimizer.h"

namespace lockstep::keras::optimizers {

struct RMSpropOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-7;
  bool centered = false;
  std::string name = "RMSprop";
};

std::shared_ptr<Optimizer> RMSprop(RMSpropOptions options = {});
// The registry's entry (registry.cc): Keras' arguments, defaults from RMSpropOptions, and the RMSprop a complete
// config describes.
std::vector<Param> rmsprop_params();
std::shared_ptr<Optimizer> rmsprop_from_config(const nlohmann::json& config);

}  // namespace lockstep::keras::optimizers
