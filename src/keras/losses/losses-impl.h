// Helpers the loss base and the losses share.
#pragma once
#include <cstdint>
#include <vector>

#include "lockstep/autograd/ops.h"

namespace lockstep::keras::losses::detail {

inline Tensor as_dtype(const Tensor& x, DType dtype) {
  return x.dtype() == dtype ? x : cast(x, dtype);
}

inline Shape without_last_axis(const Shape& s) {
  return Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 1));
}

}  // namespace lockstep::keras::losses::detail
