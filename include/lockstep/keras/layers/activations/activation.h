// keras.layers.Activation: a built-in activation function as a layer.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

class Activation : public Layer {
 public:
  static constexpr const char* kClassName = "Activation";
  static std::shared_ptr<Activation> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Activation>(*this); }
  explicit Activation(std::string activation, std::string name = "");
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::string name_of_activation_;
  activations::Activation activation_;
};

}  // namespace lockstep::keras::layers
