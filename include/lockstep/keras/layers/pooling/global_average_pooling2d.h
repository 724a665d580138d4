// keras.layers.GlobalAveragePooling2D: the mean over the height and width of NHWC images.
#pragma once
#include "lockstep/keras/layers/layer.h"
#include "lockstep/keras/layers/pooling/base_global_pooling.h"

namespace lockstep::keras::layers {

class GlobalAveragePooling2D : public GlobalPooling {
 public:
  static constexpr const char* kClassName = "GlobalAveragePooling2D";
  static std::shared_ptr<GlobalAveragePooling2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit GlobalAveragePooling2D(GlobalPoolingOptions options = {})
      : GlobalPooling(kClassName, 2, std::move(options)) {}
  LayerPtr clone() const override { return std::make_shared<GlobalAveragePooling2D>(*this); }

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

}  // namespace lockstep::keras::layers
