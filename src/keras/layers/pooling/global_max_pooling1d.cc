// keras.layers.GlobalMaxPooling1D: the maximum over the steps.
#include "lockstep/keras/layers/pooling/global_max_pooling1d.h"

#include "../layers-impl.h"
#include "pooling-impl.h"

namespace lockstep::keras::layers {

Tensor GlobalMaxPooling1D::call(const Tensor& x, bool) { return reduce_max(x, pooled_axes(), keepdims_); }

std::vector<Param> GlobalMaxPooling1D::params() { return detail::global_pooling1d_params(); }
std::shared_ptr<GlobalMaxPooling1D> GlobalMaxPooling1D::from_config(const nlohmann::json& c) {
  return detail::global_pooling_from_config<GlobalMaxPooling1D>(c);
}

}  // namespace lockstep::keras::layers
