// The base of the global 1-D and 2-D pooling layers (Keras' BaseGlobalPooling): options, output shape and config.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct GlobalPoolingOptions {                 // the options of every global pooling, 1-D or 2-D
  bool keepdims = false;                      // keep the pooled axes as size 1: (batch, 1, 1, channels)
  std::string data_format = "channels_last";  // the only layout lockstep has
  std::string name = "";
};
// Pools (batch, steps, features) inputs over steps (rank 1), or NHWC inputs over height and width (rank 2):
// (batch, channels), or with keepdims (batch, 1, channels) and (batch, 1, 1, channels).
class GlobalPooling : public Layer {
 public:
  GlobalPooling(std::string class_name, int rank, GlobalPoolingOptions options);
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  std::vector<int64_t> pooled_axes() const;  // of the input with its batch axis: {1} or {1, 2}
  int rank_;
  bool keepdims_;
};

}  // namespace lockstep::keras::layers
