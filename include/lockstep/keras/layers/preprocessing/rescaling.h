// keras.layers.Rescaling: inputs times a scale plus an offset.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

// y = x * scale + offset (images from [0, 255] to [0, 1] with scale = 1 / 255).
class Rescaling : public Layer {
 public:
  static constexpr const char* kClassName = "Rescaling";
  static std::shared_ptr<Rescaling> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit Rescaling(double scale, double offset = 0.0, std::string name = "");
  LayerPtr clone() const override { return std::make_shared<Rescaling>(*this); }
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double scale_, offset_;
};

}  // namespace lockstep::keras::layers
