// keras.layers.AveragePooling2D: the mean of each window of NHWC images.
#pragma once
#include "lockstep/keras/layers/layer.h"
#include "lockstep/keras/layers/pooling/base_pooling.h"

namespace lockstep::keras::layers {

class AveragePooling2D : public Pooling {
 public:
  static constexpr const char* kClassName = "AveragePooling2D";
  static std::shared_ptr<AveragePooling2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<AveragePooling2D>(*this); }
  explicit AveragePooling2D(int64_t pool_size = 2, PoolingOptions options = {})
      : Pooling(kClassName, 2, pool_size, std::move(options)) {}

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

}  // namespace lockstep::keras::layers
