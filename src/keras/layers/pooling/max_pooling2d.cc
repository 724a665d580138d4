// keras.layers.MaxPooling2D: nn::max_pool2d.
#include "lockstep/keras/layers/pooling/max_pooling2d.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::pooling_from_config;
using detail::pooling_params;

Tensor MaxPooling2D::call(const Tensor& x, bool) { return nn::max_pool2d(x, pool_); }

std::vector<Param> MaxPooling2D::params() { return pooling_params({2, 2}); }
std::shared_ptr<MaxPooling2D> MaxPooling2D::from_config(const nlohmann::json& c) {
  return pooling_from_config<MaxPooling2D>(c);
}

}  // namespace lockstep::keras::layers
