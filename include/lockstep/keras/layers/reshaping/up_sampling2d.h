// keras.layers.UpSampling2D: NHWC images enlarged by whole factors.
#pragma once
#include <array>

#include "lockstep/keras/layers/layer.h"

namespace lockstep::keras::layers {

struct UpSampling2DOptions {
  std::string interpolation = "nearest";      // or "bilinear" (tf.image.resize's, with half-pixel centers)
  std::string data_format = "channels_last";  // the only layout lockstep has
  std::string name = "";
};
// Enlarges NHWC images by whole factors (src/keras/layers/reshaping/up_sampling2d.cc): (batch, rows, cols, channels) gives
// (batch, rows * size[0], cols * size[1], channels).
class UpSampling2D : public Layer {
 public:
  static constexpr const char* kClassName = "UpSampling2D";
  static std::shared_ptr<UpSampling2D> from_config(const nlohmann::json& config);
  static std::vector<Param> params();  // Keras' arguments (registry.h)
  explicit UpSampling2D(int64_t size = 2, UpSampling2DOptions options = {})
      : UpSampling2D({size, size}, std::move(options)) {}
  UpSampling2D(std::array<int64_t, 2> size, UpSampling2DOptions options = {});
  LayerPtr clone() const override { return std::make_shared<UpSampling2D>(*this); }
  Shape compute_output_shape(const Shape& input_shape) const override;
  nlohmann::json get_config() const override;

 protected:
  void build(const Shape& input_shape) override;
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::array<int64_t, 2> size_;
  UpSampling2DOptions opt_;
};

}  // namespace lockstep::keras::layers
