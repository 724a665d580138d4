// keras.layers.AveragePooling2D: nn::avg_pool2d.
#include "lockstep/keras/layers/pooling/average_pooling2d.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::pooling_from_config;
using detail::pooling_params;

Tensor AveragePooling2D::call(const Tensor& x, bool) { return nn::avg_pool2d(x, pool_); }

std::vector<Param> AveragePooling2D::params() { return pooling_params(kRequired); }
std::shared_ptr<AveragePooling2D> AveragePooling2D::from_config(const nlohmann::json& c) {
  return pooling_from_config<AveragePooling2D>(c);
}

}  // namespace lockstep::keras::layers
