// The loss registry: every loss by Keras class name and short name, and losses from configs.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "lockstep/keras/losses/loss.h"
#include "lockstep/keras/registry.h"

namespace lockstep::keras::losses {

// Every loss lockstep has, by Keras class name, with Keras' short names ("sparse_categorical_crossentropy", "mse").
const Registry<std::shared_ptr<Loss>>& registry();
// A loss by short name (any case) or class name with default options; ValueError listing the short names otherwise.
std::shared_ptr<Loss> get(const std::string& identifier);
// Keras' losses.deserialize: {"class_name", "config"} as get_config() writes it (missing options take their
// defaults), or a name as get() takes it; null gives no loss.
std::shared_ptr<Loss> from_config(const nlohmann::json& config);

}  // namespace lockstep::keras::losses
