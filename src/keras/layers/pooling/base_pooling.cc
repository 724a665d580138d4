// The pooling layers' shared geometry, output shape and config.
#include "lockstep/keras/layers/pooling/base_pooling.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

using detail::channels_last;

Pooling2D::Pooling2D(std::string class_name, int64_t pool_size, Pooling2DOptions options)
    : Layer(std::move(class_name), options.name) {
  int64_t stride = options.strides.value_or(pool_size);
  LS_CHECK(pool_size > 0 && stride > 0, ValueError, "pool_size and strides must be positive, got ", pool_size, " and ", stride);
  pool_ = {.pool_h = pool_size, .pool_w = pool_size, .stride_h = stride, .stride_w = stride,
           .padding = raw_ops::padding_from_name(options.padding)};
}

Shape Pooling2D::compute_output_shape(const Shape& s) const {
  auto out = [&](int64_t in) {
    return pool_.padding == Padding::same ? (in + pool_.stride_h - 1) / pool_.stride_h : (in - pool_.pool_h) / pool_.stride_h + 1;
  };
  return Shape{out(s[0]), out(s[1]), s[2]};
}

nlohmann::json Pooling2D::get_config() const {
  nlohmann::json c = Layer::get_config();
  c["pool_size"] = {pool_.pool_h, pool_.pool_w};
  c["strides"] = {pool_.stride_h, pool_.stride_w};
  c["padding"] = pool_.padding == Padding::same ? "same" : "valid";
  c["data_format"] = "channels_last";
  return c;
}

}  // namespace lockstep::keras::layers
