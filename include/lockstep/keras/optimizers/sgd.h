// keras.optimizers.SGD: gradient descent, with momentum or Nesterov momentum.
#pragma once
#include <memory>
#include <string>

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

}  // namespace lockstep::keras::optimizers
