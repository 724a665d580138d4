// Shape: element counts, strides, axis normalisation and NumPy broadcasting.
#include "lockstep/core/error.h"

#include <algorithm>

#include "lockstep/core/shape.h"

namespace lockstep {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

int64_t Shape::normalize_axis(int64_t axis) const {
  int64_t r = rank();
  LS_CHECK(axis >= -r && axis < r, ValueError, "axis ", axis, " is out of range for a tensor of rank ", r,
           " with shape ", str(), ": use an axis in [", -r, ", ", r, ")");
  return axis < 0 ? axis + r : axis;
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> s(dims_.size());
  int64_t acc = 1;
  for (size_t i = dims_.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims_[i];
  }
  return s;
}

std::string Shape::str() const {
  std::string s = "(";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  if (dims_.size() == 1) s += ",";
  return s + ")";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  int64_t r = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.rank() ? 1 : a.dims()[static_cast<size_t>(i - (r - a.rank()))];
    int64_t db = i < r - b.rank() ? 1 : b.dims()[static_cast<size_t>(i - (r - b.rank()))];
    LS_CHECK(da == db || da == 1 || db == 1, InvalidArgumentError, "shapes ", a.str(), " and ", b.str(),
             " cannot be broadcast together: dimension ", i, " is ", da, " vs ", db,
             "; each pair of trailing dimensions must be equal or 1");
    out[static_cast<size_t>(i)] = da == 1 ? db : da;
  }
  return Shape(std::move(out));
}

}  // namespace lockstep
