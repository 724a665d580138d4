// keras.layers.Conv1D: 1-D convolution over sequences (batch, steps, channels), run as nn::conv2d on a height-1
// view so that oneDNN's convolution (and its backward) does the work.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct Conv1DOptions {
  int64_t strides = 1;
  // "valid" (no padding), "same" (ceil(steps / strides) outputs) or "causal" (kernel_size - 1 zeros before the
  // sequence: output t sees only inputs up to t * strides).
  std::string padding = "valid";
  std::string activation = "";
  bool use_bias = true;
  InitializerRef kernel_initializer = "glorot_uniform";
  InitializerRef bias_initializer = "zeros";
  regularizers::RegularizerPtr kernel_regularizer = nullptr;
  std::string name = "";
};

// Input (batch, steps, in_channels), output (batch, out_steps, filters); kernel [kernel_size, in_channels,
// filters] (Keras' layout), bias [filters].
class Conv1D : public Layer {
 public:
  static constexpr const char* kClassName = "Conv1D";
  static std::shared_ptr<Conv1D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Conv1D>(*this); }
  Conv1D(int64_t filters, int64_t kernel_size, Conv1DOptions options = {});
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t filters_, kernel_size_;
  Conv1DOptions opt_;
  Conv2dParams conv_;  // of the height-1 view
  activations::Activation activation_;
  Variable kernel_, bias_;
};

}  // namespace lockstep::keras::layers
