// Activation functions by Keras name: "relu", "softmax", "sigmoid", "tanh", "linear" (or "" for none).
#pragma once
#include <functional>
#include <string>

#include "lockstep/keras/registry.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep::keras::activations {

using Activation = std::function<Tensor(const Tensor&)>;
// Every activation lockstep has, by Keras name (activations have no options: the configs are ignored).
const Registry<Activation>& registry();
// The activation `name` names ("" is linear); ValueError listing the known names for an unknown one.
Activation get(const std::string& name);

}  // namespace lockstep::keras::activations
