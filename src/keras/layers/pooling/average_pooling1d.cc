// keras.layers.AveragePooling1D: nn::avg_pool2d over the sequence seen as an image of height 1.
#include "lockstep/keras/layers/pooling/average_pooling1d.h"

#include "../layers-impl.h"
#include "pooling-impl.h"

namespace lockstep::keras::layers {

Tensor AveragePooling1D::call(const Tensor& x, bool) { return pool(x, nn::avg_pool2d); }

std::vector<Param> AveragePooling1D::params() { return detail::pooling1d_params(kRequired); }
std::shared_ptr<AveragePooling1D> AveragePooling1D::from_config(const nlohmann::json& c) {
  return detail::pooling_from_config<AveragePooling1D>(c, 1);
}

}  // namespace lockstep::keras::layers
