// keras.layers.LeakyReLU: a ReLU with a slope below 0.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

// x where x >= 0, else x * negative_slope (Keras' LeakyReLU; Keras 2 called the slope alpha).
class LeakyReLU : public Layer {
 public:
  static constexpr const char* kClassName = "LeakyReLU";
  static std::shared_ptr<LeakyReLU> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit LeakyReLU(double negative_slope = 0.3, std::string name = "");
  LayerPtr clone() const override { return std::make_shared<LeakyReLU>(*this); }
  nlohmann::json get_config() const override;

 protected:
  Tensor call(const Tensor& x, bool training) override;

 private:
  double negative_slope_;
};

}  // namespace lockstep::keras::layers
