// Reductions over axes (sum, mean, max, min, argmax) and their broadcasting counterparts.
#include <algorithm>

#include "lockstep/kernels/cuda/kernels.h"
#include "lockstep/tensor/ops.h"
#include "ops-impl.h"

namespace lockstep::raw_ops {

namespace cpu = kernels::cpu;

std::vector<int64_t> normalize_axes(const Shape& shape, const std::vector<int64_t>& axes) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (int64_t d = 0; d < shape.rank(); ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes) out.push_back(shape.normalize_axis(a));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {
Tensor reduce(cpu::Reduce op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  if (x.dtype() == DType::bfloat16) return cast(reduce(op, cast(x, DType::float32), axes, keepdims), DType::bfloat16);
  std::vector<int64_t> reduced = normalize_axes(x.shape(), axes);
  std::vector<int64_t> kept_dims = x.shape().dims(), squeezed;
  for (int64_t a : reduced) kept_dims[static_cast<size_t>(a)] = 1;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) squeezed.push_back(kept_dims[static_cast<size_t>(d)]);
  Shape kept(kept_dims);
  LS_CHECK(op == cpu::Reduce::sum || op == cpu::Reduce::sum_of_squares || x.numel() > 0, InvalidArgumentError,
           "max/min over an empty tensor of shape ", x.shape().str(), " has no value");
  std::vector<int64_t> out_strides = kept.strides();
  for (int64_t a : reduced) out_strides[static_cast<size_t>(a)] = 0;
  Tensor out = Tensor::empty(kept, x.dtype(), x.device());
  const cpu::Iteration it{x.shape().dims(), {x.strides()}};
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(x.device()))
    kernels::cuda::reduce(op, x.dtype(), it, out_strides, x.device_data(), out.device_data(), kept.numel());
  else
#endif
    cpu::reduce(op, x.dtype(), it, out_strides, x.raw_data(), out.raw_data(), kept.numel());
  return keepdims ? out : reshape(out, Shape(squeezed));
}
}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(cpu::Reduce::sum, x, axes, keepdims);
}

Tensor sum_of_squares(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(cpu::Reduce::sum_of_squares, x, axes, keepdims);
}

Tensor max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(cpu::Reduce::max, x, axes, keepdims);
}

Tensor min(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce(cpu::Reduce::min, x, axes, keepdims);
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  int64_t count = 1;
  for (int64_t a : normalize_axes(x.shape(), axes)) count *= x.dim(a);
  Tensor s = sum(x, axes, keepdims);
  const double n = static_cast<double>(count);
  if (is_floating(s.dtype())) return binary(BinaryOp::div, s, full({}, n, s.dtype(), s.device()));
  // Integer means truncate, as TF's do.
  return cast(binary(BinaryOp::div, cast(s, DType::float64), full({}, n, DType::float64, s.device())), s.dtype());
}

Tensor argmax(const Tensor& x, int64_t axis) {
  axis = x.shape().normalize_axis(axis);
  Tensor c = x.dtype() == DType::bfloat16 ? cast(x, DType::float32) : x.contiguous();
  int64_t outer = 1, inner = 1;
  std::vector<int64_t> out_dims;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d < axis) outer *= x.dim(d);
    if (d > axis) inner *= x.dim(d);
    if (d != axis) out_dims.push_back(x.dim(d));
  }
  LS_CHECK(x.dim(axis) > 0, InvalidArgumentError, "argmax over an empty axis ", axis, " of shape ", x.shape().str());
  Tensor out = Tensor::empty(Shape(out_dims), DType::int64, x.device());
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(x.device())) {
    kernels::cuda::argmax(c.dtype(), outer, x.dim(axis), inner, c.device_data(), static_cast<int64_t*>(out.device_data()));
    return out;
  }
#endif
  cpu::argmax(c.dtype(), outer, x.dim(axis), inner, c.raw_data(), out.data<int64_t>());
  return out;
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  const int64_t lead = x.rank() - shape.rank();
  LS_CHECK(lead >= 0, InvalidArgumentError, "cannot sum shape ", x.shape().str(), " down to ", shape.str());
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d < lead || (shape.dims()[static_cast<size_t>(d - lead)] == 1 && x.dim(d) != 1)) axes.push_back(d);
  return reshape(sum(x, axes, true), shape);
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  LS_CHECK(broadcast_shapes(x.shape(), shape) == shape, InvalidArgumentError, "cannot broadcast shape ",
           x.shape().str(), " to ", shape.str());
  return Tensor(x.storage(), shape, detail::broadcast_strides(x, shape), x.offset(), x.dtype());
}

}  // namespace lockstep::raw_ops
