// keras.layers.UpSampling2D: repeats (nearest) or interpolates (bilinear) the rows and columns of NHWC images by
// whole factors, through nn::resize_images, whose ops give the gradient.
#include "lockstep/keras/layers/reshaping/up_sampling2d.h"

#include <cctype>

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::channels_last;

UpSampling2D::UpSampling2D(std::array<int64_t, 2> size, UpSampling2DOptions options)
    : Layer(kClassName, options.name), size_(size), opt_(std::move(options)) {
  LS_CHECK(size_[0] > 0 && size_[1] > 0, ValueError, "UpSampling2D needs positive sizes, got (", size_[0], ", ",
           size_[1], ")");
  for (char& c : opt_.interpolation) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));  // as Keras
  LS_CHECK(opt_.interpolation == "nearest" || opt_.interpolation == "bilinear", ValueError, "UpSampling2D layer \"",
           name(), "\": interpolation=\"", opt_.interpolation, "\" is not supported (lockstep has nearest and bilinear)");
  LS_CHECK(opt_.data_format == "channels_last", ValueError, "UpSampling2D layer \"", name(), "\": data_format=\"",
           opt_.data_format, "\" is not supported (lockstep's images are channels_last, NHWC)");
}

void UpSampling2D::build(const Shape& s) {
  LS_CHECK(s.rank() == 3, ValueError, "UpSampling2D \"", name(),
           "\" expects inputs of shape (batch, height, width, channels), got ", detail::with_none(s));
}

Shape UpSampling2D::compute_output_shape(const Shape& s) const {
  return Shape{s[0] * size_[0], s[1] * size_[1], s[2]};
}

Tensor UpSampling2D::call(const Tensor& x, bool) {
  return nn::resize_images(x, size_[0], size_[1], opt_.interpolation);
}

nlohmann::json UpSampling2D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["size"] = size_;
  c["data_format"] = opt_.data_format;
  c["interpolation"] = opt_.interpolation;
  return c;
}

std::vector<Param> UpSampling2D::params() {
  return {{"size", {2, 2}, "the factors of rows and columns (n or [rows, cols])"},
          detail::channels_last(),
          {"interpolation", "nearest", "\"nearest\" or \"bilinear\"", {"nearest", "bilinear"}}};
}

std::shared_ptr<UpSampling2D> UpSampling2D::from_config(const nlohmann::json& c) {
  const detail::ConfigReader r(kClassName, c);
  const nlohmann::json size = c.value("size", nlohmann::json{2, 2});  // n or [rows, cols]
  const std::vector<int64_t> hw = size.is_array() ? detail::json_ints(size, "size")
                                                  : std::vector<int64_t>(2, detail::json_int(size, "size"));
  LS_CHECK(hw.size() == 2, ValueError, "size=", size.dump(), " is not one or two integers");
  return std::make_shared<UpSampling2D>(std::array<int64_t, 2>{hw[0], hw[1]},
                                        UpSampling2DOptions{.interpolation = c.value("interpolation", "nearest"),
                                                            .name = r.name()});
}

}  // namespace lockstep::keras::layers
