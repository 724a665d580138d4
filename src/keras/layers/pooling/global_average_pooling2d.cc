// keras.layers.GlobalAveragePooling2D: the mean over height and width.
#include "lockstep/keras/layers/pooling/global_average_pooling2d.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::global_pooling_from_config;
using detail::global_pooling_params;

Tensor GlobalAveragePooling2D::call(const Tensor& x, bool) {
  return reduce_mean(x, {1, 2}, keepdims_);
}

std::vector<Param> GlobalAveragePooling2D::params() { return global_pooling_params(); }
std::shared_ptr<GlobalAveragePooling2D> GlobalAveragePooling2D::from_config(const nlohmann::json& c) {
  return global_pooling_from_config<GlobalAveragePooling2D>(c);
}

}  // namespace lockstep::keras::layers
