// The loss registry: the list of every loss (its class name, its factory from a config, Keras' short names and its
// parameter table, each declared beside its class in losses.h), and get / from_config.
#include "lockstep/keras/losses/registry.h"

#include "lockstep/keras/losses.h"

namespace lockstep::keras::losses {

const Registry<std::shared_ptr<Loss>>& registry() {
  // Every loss, once; a list rather than registrar objects (lockstep/keras/registry.h says why).
  static const Registry<std::shared_ptr<Loss>> r(
      "loss",
      {{"SparseCategoricalCrossentropy", sparse_categorical_crossentropy_from_config,
        {"sparse_categorical_crossentropy"}, sparse_categorical_crossentropy_params()},
       {"CategoricalCrossentropy", categorical_crossentropy_from_config, {"categorical_crossentropy"},
        categorical_crossentropy_params()},
       {"BinaryCrossentropy", binary_crossentropy_from_config, {"binary_crossentropy"}, binary_crossentropy_params()},
       {"MeanSquaredError", mean_squared_error_from_config, {"mse", "mean_squared_error"}, mean_squared_error_params()},
       {"MeanAbsoluteError", mean_absolute_error_from_config, {"mae", "mean_absolute_error"},
        mean_absolute_error_params()},
       {"Huber", huber_from_config, {"huber", "huber_loss"}, huber_params()},
       {"KLDivergence", kl_divergence_from_config, {"kl_divergence", "kld"}, kl_divergence_params()},
       {"Poisson", poisson_from_config, {"poisson"}, poisson_params()},
       {"LogCosh", log_cosh_from_config, {"log_cosh"}, log_cosh_params()},
       {"Hinge", hinge_from_config, {"hinge"}, hinge_params()}});
  return r;
}

std::shared_ptr<Loss> get(const std::string& identifier) {
  return registry().get(identifier);
}

std::shared_ptr<Loss> from_config(const nlohmann::json& config) {
  if (config.is_null()) return nullptr;
  if (config.is_string()) return get(config.get<std::string>());  // compile(loss="mse") saves the name
  return registry().from_config(config.at("class_name").get<std::string>(), config.at("config"));
}

}  // namespace lockstep::keras::losses
