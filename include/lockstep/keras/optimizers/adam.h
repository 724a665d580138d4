// keras.optimizers.Adam and AdamW (Adam with decoupled weight decay), one update rule.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
// The registry's entries (registry.cc): Keras' arguments, defaults from the options structs, and the optimizer a
// complete config describes.
std::vector<Param> adam_params();
std::shared_ptr<Optimizer> adam_from_config(const nlohmann::json& config);
std::vector<Param> adamw_params();
std::shared_ptr<Optimizer> adamw_from_config(const nlohmann::json& config);

}  // namespace lockstep::keras::optimizers
