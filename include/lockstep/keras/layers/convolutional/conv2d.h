// keras.layers.Conv2D: 2-D convolution over NHWC images.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct Conv2DOptions {
  int64_t strides = 1;
  std::string padding = "valid";
  std::string activation = "";
  bool use_bias = true;
  InitializerRef kernel_initializer = "glorot_uniform";
  InitializerRef bias_initializer = "zeros";
  regularizers::RegularizerPtr kernel_regularizer = nullptr;
  std::string name = "";
};
// 2-D convolution over NHWC input with an HWIO kernel [k, k, in, filters].
class Conv2D : public Layer {
 public:
  static constexpr const char* kClassName = "Conv2D";
  static std::shared_ptr<Conv2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Conv2D>(*this); }
  Conv2D(int64_t filters, int64_t kernel_size, Conv2DOptions options = {});
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t filters_, kernel_size_;
  Conv2DOptions opt_;
  Conv2dParams conv_;
  activations::Activation activation_;
  Variable kernel_, bias_;
};

}  // namespace lockstep::keras::layers
