// keras.optimizers.RMSprop: steps scaled by a moving average of squared gradients.
#pragma once
#include <memory>
#include <string>

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

}  // namespace lockstep::keras::optimizers
