// The base of the global 2-D pooling layers (Keras' BaseGlobalPooling): options, output shape and config.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct GlobalPooling2DOptions {
  bool keepdims = false;                      // keep the pooled axes as size 1: (batch, 1, 1, channels)
  std::string data_format = "channels_last";  // the only layout lockstep has
  std::string name = "";
};
// Pools NHWC inputs over height and width: (batch, channels), or (batch, 1, 1, channels) with keepdims.
class GlobalPooling2D : public Layer {
 public:
  GlobalPooling2D(std::string class_name, GlobalPooling2DOptions options);
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  bool keepdims_;
};

}  // namespace lockstep::keras::layers
