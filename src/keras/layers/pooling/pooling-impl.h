// The parameter tables of the 1-D pooling layers (the 2-D ones' are layers-impl.h's pooling_params and
// global_pooling_params).
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "lockstep/keras/registry.h"

namespace lockstep::keras::detail {

inline Param channels_last_sequences() {
  return Param::fixed("data_format", nullptr, "lockstep's sequences are channels_last (batch, steps, features)",
                      {"channels_last"});
}

// MaxPooling1D's and AveragePooling1D's arguments; `pool_size` is Keras' default (AveragePooling1D has none).
inline std::vector<Param> pooling1d_params(const nlohmann::json& pool_size) {
  return {{"pool_size", pool_size, "the window's length (n or [n])"},
          {"strides", nullptr, "the step between windows (n or [n]); None is pool_size"},
          {"padding", "valid", "\"valid\" or \"same\" (ceil(steps / strides) outputs)"},
          channels_last_sequences(),
          {"name", nullptr, "the layer's name"}};
}

inline std::vector<Param> global_pooling1d_params() {
  return {channels_last_sequences(), {"keepdims", false, "keep the steps axis, of size 1"}};
}

}  // namespace lockstep::keras::detail
