// keras.layers.LeakyReLU: where(x >= 0, x, x * negative_slope).
#include "lockstep/keras/layers/activations/leaky_relu.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

LeakyReLU::LeakyReLU(double negative_slope, std::string name)
    : Layer(kClassName, std::move(name)), negative_slope_(negative_slope) {
  LS_CHECK(negative_slope >= 0, ValueError, "LeakyReLU \"", this->name(), "\": negative_slope must be >= 0, got ",
           negative_slope);
}

Tensor LeakyReLU::call(const Tensor& x, bool) {
  return where(greater_equal(x, scalar(0, x.dtype())), x, x * negative_slope_);
}

nlohmann::json LeakyReLU::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["negative_slope"] = negative_slope_;
  return c;
}

std::vector<Param> LeakyReLU::params() {
  return {{"negative_slope", 0.3, "the slope below 0 (Keras 2 called it alpha)"}};
}

std::shared_ptr<LeakyReLU> LeakyReLU::from_config(const nlohmann::json& c) {
  const nlohmann::json slope = c.value("alpha", c.value("negative_slope", nlohmann::json(0.3)));  // Keras 2's alpha
  LS_CHECK(slope.is_number(), ValueError, "LeakyReLU: negative_slope must be a number, got ", slope.dump().substr(0, 40));
  return std::make_shared<LeakyReLU>(slope.get<double>(), c.value("name", ""));
}

}  // namespace lockstep::keras::layers
