// keras.optimizers.Adam and AdamW (Adam with decoupled weight decay), one update rule.
#pragma once
#include <memory>
#include <string>

#include "lockstep/keras/optimizers/optimizer.h"

namespace lockstep::keras::optimizers {

struct AdamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  std::string name = "Adam";
};

// Adam with decoupled weight decay (Keras' AdamW, Loshchilov & Hutter): before each Adam step every variable
// loses weight_decay * learning_rate of itself.
struct AdamWOptions {
  LearningRate learning_rate = 0.001;
  double weight_decay = 0.004;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  std::string name = "AdamW";
};

std::shared_ptr<Optimizer> Adam(AdamOptions options = {});
std::shared_ptr<Optimizer> AdamW(AdamWOptions options = {});

}  // namespace lockstep::keras::optimizers
