// The base of the 2-D pooling layers (Keras' BasePooling): window geometry, output shape and config.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct Pooling2DOptions {
  std::optional<int64_t> strides = std::nullopt;  // defaults to pool_size
  std::string padding = "valid";
  std::string name = "";
};
// What MaxPooling2D and AveragePooling2D share: geometry, output shape, config.
class Pooling2D : public Layer {
 public:
  Pooling2D(std::string class_name, int64_t pool_size, Pooling2DOptions options);
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  Pool2dOptions pool_;
};

}  // namespace lockstep::keras::layers
