// keras.layers.MaxPooling1D: the maximum of each window of sequences (batch, steps, features).
#pragma once
#include "lockstep/keras/layers/layer.h"
#include "lockstep/keras/layers/pooling/base_pooling.h"

namespace lockstep::keras::layers {

class MaxPooling1D : public Pooling {
 public:
  static constexpr const char* kClassName = "MaxPooling1D";
  static std::shared_ptr<MaxPooling1D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<MaxPooling1D>(*this); }
  explicit MaxPooling1D(int64_t pool_size = 2, PoolingOptions options = {})
      : Pooling(kClassName, 1, pool_size, std::move(options)) {}

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

}  // namespace lockstep::keras::layers
