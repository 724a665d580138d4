// keras.layers.Rescaling: x * scale + offset, integer images cast to the layer's dtype first.
#include "lockstep/keras/layers/preprocessing/rescaling.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::check_supported;

Rescaling::Rescaling(double scale, double offset, std::string name)
    : Layer(kClassName, std::move(name)), scale_(scale), offset_(offset) {}

Tensor Rescaling::call(const Tensor& x_in, bool) {
  // Integer images become floats of the layer's dtype first, as in Keras.
  const Tensor x = x_in.dtype() == compute_dtype() ? x_in : cast(x_in, compute_dtype());
  return offset_ == 0.0 ? x * scale_ : x * scale_ + offset_;
}

nlohmann::json Rescaling::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["scale"] = scale_;
  c["offset"] = offset_;
  return c;
}

std::vector<Param> Rescaling::params() {
  return {{"scale", kRequired, "the factor: one number"}, {"offset", 0.0, "added after scaling: one number"}};
}

std::shared_ptr<Rescaling> Rescaling::from_config(const nlohmann::json& c) {
  check_supported(c.at("scale").is_number() && c.value("offset", nlohmann::json(0.0)).is_number(), kClassName,
                  c.value("name", ""), "a per-channel scale or offset", "lockstep takes one number for each");
  return std::make_shared<Rescaling>(c["scale"].get<double>(), c.value("offset", 0.0), c.value("name", ""));
}

}  // namespace lockstep::keras::layers
