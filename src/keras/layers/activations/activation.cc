// keras.layers.Activation: a built-in activation by name.
#include "lockstep/keras/layers/activations/activation.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::ConfigReader;

Activation::Activation(std::string activation, std::string name)
    : Layer(kClassName, std::move(name)),
      name_of_activation_(std::move(activation)),
      activation_(activations::get(name_of_activation_)) {}

Tensor Activation::call(const Tensor& x, bool) { return activation_(x); }

nlohmann::json Activation::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["activation"] = name_of_activation_;
  return c;
}

std::vector<Param> Activation::params() {
  return {{"activation", kRequired, "the activation's name (relu, softmax, sigmoid, tanh, linear)"}};
}

std::shared_ptr<Activation> Activation::from_config(const nlohmann::json& c) {
  const ConfigReader r(kClassName, c);
  return std::make_shared<Activation>(r.activation().empty() ? "linear" : r.activation(), r.name());
}

}  // namespace lockstep::keras::layers
