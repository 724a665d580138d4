// The global pooling layers' shared options, input check, output shape and config.
#include "lockstep/keras/layers/pooling/base_global_pooling.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::channels_last;
using detail::check_supported;

GlobalPooling2D::GlobalPooling2D(std::string class_name, GlobalPooling2DOptions options)
    : Layer(std::move(class_name), options.name), keepdims_(options.keepdims) {
  check_supported(options.data_format == "channels_last", this->class_name(), name(),
                  "data_format=\"" + options.data_format + "\"", "lockstep's images are channels_last (NHWC)");
}

void GlobalPooling2D::build(const Shape& s) {
  LS_CHECK(s.rank() == 3, ValueError, class_name(), " \"", name(),
           "\" expects inputs of shape (batch, height, width, channels), got ", detail::with_none(s));
}

Shape GlobalPooling2D::compute_output_shape(const Shape& s) const {
  return keepdims_ ? Shape{1, 1, s[-1]} : Shape{s[-1]};
}

nlohmann::json GlobalPooling2D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["data_format"] = "channels_last";
  c["keepdims"] = keepdims_;
  return c;
}

}  // namespace lockstep::keras::layers
