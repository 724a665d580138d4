// keras.layers.Dense: a densely connected layer over the last axis.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct DenseOptions {
  std::string activation = "";
  bool use_bias = true;
  InitializerRef kernel_initializer = "glorot_uniform";
  InitializerRef bias_initializer = "zeros";
  regularizers::RegularizerPtr kernel_regularizer = nullptr;
  std::string name = "";
};
// y = activation(x @ kernel + bias) over the last axis; kernel [in, units].
class Dense : public Layer {
 public:
  static constexpr const char* kClassName = "Dense";
  static std::shared_ptr<Dense> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<Dense>(*this); }
  explicit Dense(int64_t units, DenseOptions options = {});
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  int64_t units_;
  DenseOptions opt_;
  activations::Activation activation_;
  Variable kernel_, bias_;
};

}  // namespace lockstep::keras::layers
