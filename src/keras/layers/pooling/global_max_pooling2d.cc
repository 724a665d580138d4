// keras.layers.GlobalMaxPooling2D: the maximum over height and width.
#include "lockstep/keras/layers/pooling/global_max_pooling2d.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::global_pooling_from_config;
using detail::global_pooling_params;

Tensor GlobalMaxPooling2D::call(const Tensor& x, bool) {
  return reduce_max(x, {1, 2}, keepdims_);
}

std::vector<Param> GlobalMaxPooling2D::params() { return global_pooling_params(); }
std::shared_ptr<GlobalMaxPooling2D> GlobalMaxPooling2D::from_config(const nlohmann::json& c) {
  return global_pooling_from_config<GlobalMaxPooling2D>(c);
}

}  // namespace lockstep::keras::layers
