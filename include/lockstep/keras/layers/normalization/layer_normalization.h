// keras.layers.LayerNormalization: normalisation of each example over its last axis.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct LayerNormalizationOptions {
  int64_t axis = -1;  // only the last axis is supported
  double epsilon = 1e-3;
  bool center = true;  // add beta
  bool scale = true;   // multiply by gamma
  InitializerRef beta_initializer = "zeros";
  InitializerRef gamma_initializer = "ones";
  std::string name = "";
};
// Normalises each example over its last axis: (x - mean) / sqrt(variance + epsilon) * gamma + beta.
class LayerNormalization : public Layer {
 public:
  static constexpr const char* kClassName = "LayerNormalization";
  static std::shared_ptr<LayerNormalization> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit LayerNormalization(LayerNormalizationOptions options = {});
  LayerPtr clone() const override { return std::make_shared<LayerNormalization>(*this); }
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  LayerNormalizationOptions opt_;
  Variable gamma_, beta_;
};

}  // namespace lockstep::keras::layers
