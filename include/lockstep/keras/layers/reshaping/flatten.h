// keras.layers.Flatten: the features as one axis.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

class Flatten : public Layer {
 public:
  static constexpr const char* kClassName = "Flatten";
  static std::shared_ptr<Flatten> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Flatten>(*this); }
  explicit Flatten(std::string name = "");
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

}  // namespace lockstep::keras::layers
