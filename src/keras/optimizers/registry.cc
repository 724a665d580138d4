// The optimizer registry: the list of every optimizer (its class name, its factory from a config, Keras' short
// names and its parameter table, each declared beside its class), and get / from_config.
#include "lockstep/keras/optimizers/registry.h"

#include "lockstep/keras/optimizers.h"

namespace lockstep::keras::optimizers {

const Registry<std::shared_ptr<Optimizer>>& registry() {
  // Every optimizer, once; a list rather than registrar objects (lockstep/keras/registry.h says why).
  static const Registry<std::shared_ptr<Optimizer>> r(
      "optimizer", {{"SGD", sgd_from_config, {"sgd"}, sgd_params()},
                    {"RMSprop", rmsprop_from_config, {"rmsprop"}, rmsprop_params()},
                    {"Adam", adam_from_config, {"adam"}, adam_params()},
                    {"AdamW", adamw_from_config, {"adamw"}, adamw_params()},
                    {"Adagrad", adagrad_from_config, {"adagrad"}, adagrad_params()}});
  return r;
}

std::shared_ptr<Optimizer> get(const std::string& identifier) {
  return registry().get(identifier);
}

std::shared_ptr<Optimizer> from_config(const nlohmann::json& config) {
  if (config.is_string()) return get(config.get<std::string>());
  return registry().from_config(config.at("class_name").get<std::string>(), config.at("config"));
}

}  // namespace lockstep::keras::optimizers
