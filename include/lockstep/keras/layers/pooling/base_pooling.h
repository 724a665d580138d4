// The base of the 1-D and 2-D pooling layers (Keras' BasePooling): window geometry, output shape and config.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct PoolingOptions {                           // the options of every window pooling, 1-D or 2-D
  std::optional<int64_t> strides = std::nullopt;  // defaults to pool_size
  std::string padding = "valid";
  std::string name = "";
};
// What MaxPooling1D/2D and AveragePooling1D/2D share: geometry, output shape, config. Inputs are
// (batch, steps, features) for rank 1 and NHWC for rank 2; a sequence is pooled as an image of height 1.
class Pooling : public Layer {
 public:
  Pooling(std::string class_name, int rank, int64_t pool_size, PoolingOptions options);
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  // x pooled by `op` (nn::max_pool2d or nn::avg_pool2d, whose backward gives the gradient), through the
  // height-1 view for rank 1.
  Tensor pool(const Tensor& x, Tensor (*op)(const Tensor&, const Pool2dOptions&)) const;
  int rank_;
  Pool2dOptions pool_;
};

}  // namespace lockstep::keras::layers
