// keras.layers.GlobalMaxPooling2D: the maximum over the height and width of NHWC images.
#pragma once
#include "lockstep/keras/layers/layer.h"
#include "lockstep/keras/layers/pooling/base_global_pooling.h"

namespace lockstep::keras::layers {

class GlobalMaxPooling2D : public GlobalPooling {
 public:
  static constexpr const char* kClassName = "GlobalMaxPooling2D";
  static std::shared_ptr<GlobalMaxPooling2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit GlobalMaxPooling2D(GlobalPoolingOptions options = {}) : GlobalPooling(kClassName, 2, std::move(options)) {}
  LayerPtr clone() const override { return std::make_shared<GlobalMaxPooling2D>(*this); }

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

}  // namespace lockstep::keras::layers
