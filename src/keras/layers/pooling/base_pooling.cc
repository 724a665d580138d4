// The pooling layers' shared geometry, input check, output shape and config.
#include "lockstep/keras/layers/pooling/base_pooling.h"

#include "../layers-impl.h"

namespace lockstep::keras::layers {

Pooling::Pooling(std::string class_name, int rank, int64_t pool_size, PoolingOptions options)
    : Layer(std::move(class_name), options.name), rank_(rank) {
  int64_t stride = options.strides.value_or(pool_size);
  LS_CHECK(pool_size > 0 && stride > 0, ValueError, "pool_size and strides must be positive, got ", pool_size, " and ", stride);
  // Rank 1 pools along the width of a height-1 image.
  pool_ = {.pool_h = rank == 1 ? 1 : pool_size, .pool_w = pool_size, .stride_h = rank == 1 ? 1 : stride, .stride_w = stride,
           .padding = raw_ops::padding_from_name(options.padding)};
}

void Pooling::build(const Shape& s) {
  LS_CHECK(s.rank() == rank_ + 1, ValueError, class_name(), " \"", name(), "\" expects inputs of shape ",
           rank_ == 1 ? "(batch, steps, features)" : "(batch, height, width, channels)", ", got ", detail::with_none(s));
  for (int64_t i = 0; i < rank_; ++i)
    LS_CHECK(pool_.padding == Padding::same || s[i] < 0 || s[i] >= pool_.pool_w, ValueError, class_name(), " \"",
             name(), "\": inputs of shape ", detail::with_none(s), " are smaller than its pool_size ", pool_.pool_w,
             " with padding \"valid\"");
}

Shape Pooling::compute_output_shape(const Shape& s) const {
  auto out = [&](int64_t in) {
    return pool_.padding == Padding::same ? (in + pool_.stride_w - 1) / pool_.stride_w : (in - pool_.pool_w) / pool_.stride_w + 1;
  };
  if (rank_ == 1) return Shape{out(s[0]), s[1]};
  return Shape{out(s[0]), out(s[1]), s[2]};
}

Tensor Pooling::pool(const Tensor& x, Tensor (*op)(const Tensor&, const Pool2dOptions&)) const {
  if (rank_ == 2) return op(x, pool_);
  const Tensor y = op(reshape(x, Shape{x.dim(0), 1, x.dim(1), x.dim(2)}), pool_);
  return reshape(y, Shape{y.dim(0), y.dim(2), y.dim(3)});
}

nlohmann::json Pooling::get_config() const {
  const auto tuple = [this](int64_t v) { return std::vector<int64_t>(static_cast<size_t>(rank_), v); };
  nlohmann::json c = Layer::get_config();
  c["pool_size"] = tuple(pool_.pool_w);
  c["strides"] = tuple(pool_.stride_w);
  c["padding"] = pool_.padding == Padding::same ? "same" : "valid";
  c["data_format"] = "channels_last";
  return c;
}

}  // namespace lockstep::keras::layers
