// keras.layers.GlobalAveragePooling1D: the mean over the steps. Keras' call(mask=...) has no counterpart: lockstep has
// no masking (Embedding refuses mask_zero=True), so every step counts.
#include "lockstep/keras/layers/pooling/global_average_pooling1d.h"

#include "../layers-impl.h"
#include "pooling-impl.h"

namespace lockstep::keras::layers {

Tensor GlobalAveragePooling1D::call(const Tensor& x, bool) { return reduce_mean(x, pooled_axes(), keepdims_); }

std::vector<Param> GlobalAveragePooling1D::params() { return detail::global_pooling1d_params(); }
std::shared_ptr<GlobalAveragePooling1D> GlobalAveragePooling1D::from_config(const nlohmann::json& c) {
  return detail::global_pooling_from_config<GlobalAveragePooling1D>(c);
}

}  // namespace lockstep::keras::layers
