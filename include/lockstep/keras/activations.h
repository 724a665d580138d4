// Activation functions by Keras name: "relu", "softmax", "sigmoid", "tanh", "linear" (or "" for none).
#pragma once
#include <functional>
#include <string>

#include "lockstep/tensor/tensor.h"

namespace lockstep::keras::activations {

using Activation = std::function<Tensor(const Tensor&)>;
// Throws ValueError listing the known names for an unknown one.
Activation get(const std::string& name);

}  // namespace lockstep::keras::activations
