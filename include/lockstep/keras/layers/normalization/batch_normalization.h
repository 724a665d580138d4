// keras.layers.BatchNormalization: normalisation with batch statistics while training, moving ones otherwise.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct BatchNormalizationOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  std::string name = "";
};
// Normalises the last axis with batch statistics while training and moving statistics otherwise.
class BatchNormalization : public Layer {
 public:
  static constexpr const char* kClassName = "BatchNormalization";
  static std::shared_ptr<BatchNormalization> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  LayerPtr clone() const override { return std::make_shared<BatchNormalization>(*this); }
  explicit BatchNormalization(BatchNormalizationOptions options = {});
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  BatchNormalizationOptions opt_;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};

}  // namespace lockstep::keras::layers
