// keras.layers.MaxPooling1D: nn::max_pool2d over the sequence seen as an image of height 1.
#include "lockstep/keras/layers/pooling/max_pooling1d.h"

#include "../layers-impl.h"
#include "pooling-impl.h"

namespace lockstep::keras::layers {

Tensor MaxPooling1D::call(const Tensor& x, bool) { return pool(x, nn::max_pool2d); }

std::vector<Param> MaxPooling1D::params() { return detail::pooling1d_params(2); }
std::shared_ptr<MaxPooling1D> MaxPooling1D::from_config(const nlohmann::json& c) {
  return detail::pooling_from_config<MaxPooling1D>(c, 1);
}

}  // namespace lockstep::keras::layers
