// keras.layers.GlobalMaxPooling1D: the maximum over the steps of sequences (batch, steps, features).
#pragma once
#include "lockstep/keras/layers/layer.h"
#include "lockstep/keras/layers/pooling/base_global_pooling.h"

namespace lockstep::keras::layers {

class GlobalMaxPooling1D : public GlobalPooling {
 public:
  static constexpr const char* kClassName = "GlobalMaxPooling1D";
  static std::shared_ptr<GlobalMaxPooling1D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit GlobalMaxPooling1D(GlobalPoolingOptions options = {}) : GlobalPooling(kClassName, 1, std::move(options)) {}
  LayerPtr clone() const override { return std::make_shared<GlobalMaxPooling1D>(*this); }

 protected:
  Tensor call(const Tensor& x, bool training) override;
};

}  // namespace lockstep::keras::layers
