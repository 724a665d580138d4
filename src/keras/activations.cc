// Activation functions by name.
#include "lockstep/keras/activations.h"

#include "lockstep/autograd/ops.h"

namespace lockstep::keras::activations {

Activation get(const std::string& name) {
  if (name.empty() || name == "linear") return [](const Tensor& x) { return x; };
  if (name == "relu") return [](const Tensor& x) { return nn::relu(x); };
  if (name == "softmax") return [](const Tensor& x) { return nn::softmax(x); };
  if (name == "sigmoid") return [](const Tensor& x) { return sigmoid(x); };
  if (name == "tanh") return [](const Tensor& x) { return tanh(x); };
  throw ValueError(make_message("unknown activation '", name, "': use relu, softmax, sigmoid, tanh or linear"));
}

}  // namespace lockstep::keras::activations
