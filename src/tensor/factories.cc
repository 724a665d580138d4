// Tensor factories: constants, ranges, copies of host data, and random tensors drawn from Philox.
#include <cmath>
#include <algorithm>
#include <cstring>

#include "lockstep/kernels/cuda/kernels.h"
#include "lockstep/kernels/cuda/runtime.h"
#include "lockstep/tensor/ops.h"

namespace lockstep {

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor out = Tensor::empty(shape, dtype, device);
  if (device.is_gpu()) {
#if LOCKSTEP_WITH_CUDA
    kernels::cuda::set_device(device.index);
    kernels::cuda::fill(dtype, out.numel(), value, out.device_data());
#endif
    return out;
  }
  visit_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    T x;
    if constexpr (std::is_same_v<T, bfloat16>) x = bfloat16(static_cast<float>(value));
    else x = static_cast<T>(value);
    std::fill_n(out.data<T>(), out.numel(), x);
  });
  return out;
}

Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1, dtype, device); }
Tensor zeros_like(const Tensor& x) { return zeros(x.shape(), x.dtype(), x.device()); }
Tensor ones_like(const Tensor& x) { return ones(x.shape(), x.dtype(), x.device()); }
Tensor scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor arange(double start, double limit, double delta, DType dtype) {
  LS_CHECK(delta != 0, ValueError, "arange delta must not be 0");
  const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<double>(i) * delta;
  return raw_ops::cast(from_vector(v, Shape{n}), dtype);
}

Tensor from_data(const void* data, const Shape& shape, DType dtype) {
  Tensor out = Tensor::empty(shape, dtype);
  if (shape.numel() > 0) std::memcpy(out.raw_data(), data, static_cast<size_t>(shape.numel()) * dtype_size(dtype));
  return out;
}

template <typename T> Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  LS_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), InvalidArgumentError, "from_vector: ",
           values.size(), " values do not fill shape ", shape.str(), " (", shape.numel(), " elements)");
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return from_data(bytes.data(), shape, DType::bool_);
  } else {
    return from_data(values.data(), shape, dtype_of<T>());
  }
}
template Tensor from_vector(const std::vector<float>&, const Shape&);
template Tensor from_vector(const std::vector<double>&, const Shape&);
template Tensor from_vector(const std::vector<int64_t>&, const Shape&);
template Tensor from_vector(const std::vector<int32_t>&, const Shape&);
template Tensor from_vector(const std::vector<uint8_t>&, const Shape&);
template Tensor from_vector(const std::vector<bool>&, const Shape&);
template Tensor from_vector(const std::vector<bfloat16>&, const Shape&);

namespace {
// Draws into a float32 or float64 tensor with fill(ptr, n); other float dtypes are cast from float32.
template <typename Fill> Tensor random_tensor(const Shape& shape, DType dtype, Fill fill) {
  LS_CHECK(is_floating(dtype), InvalidArgumentError, "random tensors must be floating point, got ",
           dtype_name(dtype));
  if (dtype == DType::float64) {
    Tensor out = Tensor::empty(shape, dtype);
    fill(out.data<double>(), out.numel());
    return out;
  }
  Tensor out = Tensor::empty(shape, DType::float32);
  fill(out.data<float>(), out.numel());
  return raw_ops::cast(out, dtype);
}
}  // namespace

Tensor random_uniform(const Shape& shape, Philox& rng, double minval, double maxval, DType dtype) {
  return random_tensor(shape, dtype, [&](auto* p, int64_t n) {
    using T = std::remove_pointer_t<decltype(p)>;
    rng.fill_uniform(p, n, static_cast<T>(minval), static_cast<T>(maxval));
  });
}

Tensor random_normal(const Shape& shape, Philox& rng, double mean, double stddev, DType dtype) {
  return random_tensor(shape, dtype, [&](auto* p, int64_t n) {
    using T = std::remove_pointer_t<decltype(p)>;
    rng.fill_normal(p, n, static_cast<T>(mean), static_cast<T>(stddev));
  });
}

Tensor truncated_normal(const Shape& shape, Philox& rng, double mean, double stddev, DType dtype) {
  return random_tensor(shape, dtype, [&](auto* p, int64_t n) {
    using T = std::remove_pointer_t<decltype(p)>;
    rng.fill_truncated_normal(p, n, static_cast<T>(mean), static_cast<T>(stddev));
  });
}

}  // namespace lockstep
