// Sequences of values: linspace, composed of differentiable ops so that its gradient is theirs.
#include "lockstep/autograd/ops.h"
#include "lockstep/core/error.h"

namespace lockstep {

Tensor linspace(const Tensor& start, const Tensor& stop, int64_t num, int64_t axis) {
  LS_CHECK(is_floating(start.dtype()) && start.dtype() == stop.dtype(), InvalidArgumentError,
           "linspace: start and stop must have one floating dtype, got ", dtype_name(start.dtype()), " and ",
           dtype_name(stop.dtype()), "; cast them, e.g. tf.cast(start, tf.float32)");
  LS_CHECK(num >= 0, InvalidArgumentError, "linspace: num must be >= 0, got ", num);
  const Shape shape = broadcast_shapes(start.shape(), stop.shape());
  const int64_t rank = shape.rank();
  LS_CHECK(axis >= -(rank + 1) && axis <= rank, InvalidArgumentError, "linspace: axis ", axis,
           " is out of range for inputs of rank ", rank, " (it may be from ", -(rank + 1), " to ", rank, ")");
  if (axis < 0) axis += rank + 1;
  // The inputs' shape with the new axis, of `n` values.
  auto with_axis = [&](int64_t n) {
    std::vector<int64_t> dims = shape.dims();
    dims.insert(dims.begin() + axis, n);
    return Shape(dims);
  };
  const Tensor first = reshape(broadcast_to(start, shape), with_axis(1));
  if (num <= 1) return num == 1 ? first : zeros(with_axis(0), start.dtype());
  const Tensor last = reshape(broadcast_to(stop, shape), with_axis(1));
  const Tensor delta = (last - first) / static_cast<double>(num - 1);
  std::vector<int64_t> steps_shape(static_cast<size_t>(rank + 1), 1);
  steps_shape[static_cast<size_t>(axis)] = num - 2;
  const Tensor steps = reshape(cast(arange(1, static_cast<double>(num - 1)), start.dtype()), Shape(steps_shape));
  return concat({first, first + delta * steps, last}, axis);
}

}  // namespace lockstep
