// keras.layers.Reshape: the features given a new shape.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

class Reshape : public Layer {
 public:
  static constexpr const char* kClassName = "Reshape";
  static std::shared_ptr<Reshape> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Reshape>(*this); }
  explicit Reshape(Shape target_shape, std::string name = "");
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  Shape target_;
};

}  // namespace lockstep::keras::layers
