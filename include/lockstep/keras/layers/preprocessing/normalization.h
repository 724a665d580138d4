// keras.layers.Normalization: features shifted and scaled by given or adapted mean and variance.
#pragma once
#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct NormalizationOptions {
  // Given statistics (one number, or one per feature of the last axis); without them the layer holds mean and
  // variance as non-trainable weights that adapt() sets from data.
  std::optional<std::vector<double>> mean, variance;
  bool invert = false;  // x * std + mean: undoes the normalisation
  std::string name = "";
};
// Keras' Normalization over the last axis (axis=-1): (x - mean) / max(sqrt(variance), 1e-7) per feature.
class Normalization : public Layer {
 public:
  static constexpr const char* kClassName = "Normalization";
  static std::shared_ptr<Normalization> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit Normalization(NormalizationOptions options = {});
  LayerPtr clone() const override { return std::make_shared<Normalization>(*this); }
  nlohmann::json get_config() const override;
  // Keras' layer.adapt(data): mean and variance of `data` [N, ..., features] over every axis but the last,
  // accumulated in double; builds the layer for data's shape first.
  void adapt(const Tensor& data);

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  NormalizationOptions opt_;
  Tensor given_mean_, given_variance_;  // the given statistics as float32 tensors, made once
  Variable mean_, variance_;
};

}  // namespace lockstep::keras::layers
