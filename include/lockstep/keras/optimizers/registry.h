// The optimizer registry: every optimizer by Keras class name and short name, and optimizers from configs.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "lockstep/keras/optimizers/optimizer.h"
#include "lockstep/keras/registry.h"

namespace lockstep::keras::optimizers {

// Every optimizer lockstep has, by Keras class name, with Keras' short names ("sgd", "rmsprop", "adam", "adamw", "adagrad").
const Registry<std::shared_ptr<Optimizer>>& registry();
// An optimizer by short or class name (any case) with default options; ValueError listing the short names otherwise.
std::shared_ptr<Optimizer> get(const std::string& identifier);
// Keras' optimizers.deserialize: {"class_name", "config"} as get_config() writes it (missing options take their
// defaults), or a name as get() takes it.
std::shared_ptr<Optimizer> from_config(const nlohmann::json& config);

}  // namespace lockstep::keras::optimizers
