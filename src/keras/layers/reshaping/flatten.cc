// keras.layers.Flatten: the features as one axis.
#include "lockstep/keras/layers/reshaping/flatten.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::channels_last;

Flatten::Flatten(std::string name) : Layer(kClassName, std::move(name)) {}
nlohmann::json Flatten::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["data_format"] = "channels_last";
  return c;
}
Shape Flatten::compute_output_shape(const Shape& input_shape) const { return Shape{input_shape.numel()}; }
Tensor Flatten::call(const Tensor& x, bool) { return reshape(x, Shape{x.dim(0), -1}); }

std::vector<Param> Flatten::params() { return {channels_last()}; }
std::shared_ptr<Flatten> Flatten::from_config(const nlohmann::json& c) {
  return std::make_shared<Flatten>(c.value("name", ""));
}

}  // namespace lockstep::keras::layers
