// Shape ops: reshape, transpose and slice as views; concat, stack, gather, one_hot as copies.
#include <cstring>
#include <numeric>

#include "lockstep/kernels/cuda/kernels.h"
#include "lockstep/tensor/ops.h"
#include "ops-impl.h"

namespace lockstep::raw_ops {

Tensor reshape(const Tensor& x, const Shape& shape) {
  std::vector<int64_t> dims = shape.dims();
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      LS_CHECK(infer < 0, InvalidArgumentError, "reshape to ", shape.str(), ": only one dimension may be -1");
      infer = static_cast<int64_t>(i);
    } else {
      LS_CHECK(dims[i] >= 0, InvalidArgumentError, "reshape to ", shape.str(), ": negative dimension");
      known *= dims[i];
    }
  }
  if (infer >= 0) {
    LS_CHECK(known > 0 && x.numel() % known == 0, InvalidArgumentError, "cannot reshape a tensor of shape ",
             x.shape().str(), " (", x.numel(), " elements) to ", shape.str());
    dims[static_cast<size_t>(infer)] = x.numel() / known;
  }
  Shape out(dims);
  LS_CHECK(out.numel() == x.numel(), InvalidArgumentError, "cannot reshape a tensor of shape ", x.shape().str(),
           " (", x.numel(), " elements) to ", out.str(), " (", out.numel(), " elements)");
  Tensor c = x.contiguous();
  return Tensor(c.storage(), out, out.strides(), c.offset(), c.dtype());
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  LS_CHECK(static_cast<int64_t>(perm.size()) == x.rank(), InvalidArgumentError, "transpose of a rank-", x.rank(),
           " tensor needs ", x.rank(), " axes in perm, got ", perm.size());
  std::vector<int64_t> dims(perm.size()), strides(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = x.shape().normalize_axis(perm[i]);
    LS_CHECK(!seen[static_cast<size_t>(p)], InvalidArgumentError, "transpose perm repeats axis ", p);
    seen[static_cast<size_t>(p)] = true;
    dims[i] = x.dim(p);
    strides[i] = x.strides()[static_cast<size_t>(p)];
  }
  return Tensor(x.storage(), Shape(dims), strides, x.offset(), x.dtype());
}

Tensor slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  LS_CHECK(static_cast<int64_t>(begin.size()) == x.rank() && begin.size() == size.size(), InvalidArgumentError,
           "slice of a rank-", x.rank(), " tensor needs ", x.rank(), " begin and size values, got ", begin.size(),
           " and ", size.size());
  std::vector<int64_t> dims(begin.size());
  int64_t offset = x.offset();
  for (size_t i = 0; i < begin.size(); ++i) {
    int64_t d = x.shape().dims()[i];
    int64_t n = size[i] == -1 ? d - begin[i] : size[i];
    LS_CHECK(begin[i] >= 0 && n >= 0 && begin[i] + n <= d, InvalidArgumentError, "slice [", begin[i], ", ",
             begin[i] + n, ") is out of range for axis ", i, " of size ", d, " in shape ", x.shape().str());
    dims[i] = n;
    offset += begin[i] * x.strides()[i];
  }
  return Tensor(x.storage(), Shape(dims), x.strides(), offset, x.dtype());
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  LS_CHECK(!xs.empty(), InvalidArgumentError, "concat needs at least one tensor");
  const Tensor& first = xs[0];
  axis = first.shape().normalize_axis(axis);
  std::vector<int64_t> dims = first.shape().dims();
  dims[static_cast<size_t>(axis)] = 0;
  for (const Tensor& x : xs) {
    LS_CHECK(x.dtype() == first.dtype() && x.rank() == first.rank(), InvalidArgumentError,
             "concat needs tensors of one dtype and rank: got ", dtype_name(first.dtype()), first.shape().str(),
             " and ", dtype_name(x.dtype()), x.shape().str());
    for (int64_t d = 0; d < x.rank(); ++d)
      LS_CHECK(d == axis || x.dim(d) == first.dim(d), InvalidArgumentError, "concat along axis ", axis,
               ": shapes ", first.shape().str(), " and ", x.shape().str(), " differ in dimension ", d);
    dims[static_cast<size_t>(axis)] += x.dim(axis);
  }
  const Device device = xs[0].device();
  Tensor out = Tensor::empty(Shape(dims), first.dtype(), device);
  if (device.is_gpu()) {  // each input copied into its slice of the output by the strided-copy kernel
    std::vector<int64_t> begin(dims.size(), 0), size = dims;
    for (const Tensor& x : xs) {
      size[static_cast<size_t>(axis)] = x.dim(axis);
      slice(out, begin, size).copy_from(x);
      begin[static_cast<size_t>(axis)] += x.dim(axis);
    }
    return out;
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= dims[static_cast<size_t>(d)];
  const size_t esize = dtype_size(first.dtype());
  const size_t out_row = static_cast<size_t>(out.numel() / std::max<int64_t>(outer, 1)) * esize;
  size_t at = 0;
  for (const Tensor& x : xs) {
    Tensor c = x.contiguous();
    const size_t row = static_cast<size_t>(c.numel() / std::max<int64_t>(outer, 1)) * esize;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out.raw_data()) + static_cast<size_t>(o) * out_row + at,
                  static_cast<const char*>(c.raw_data()) + static_cast<size_t>(o) * row, row);
    at += row;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  LS_CHECK(!xs.empty(), InvalidArgumentError, "stack needs at least one tensor");
  Shape first = xs[0].shape();
  std::vector<int64_t> dims = first.dims();
  const int64_t r = first.rank() + 1;
  LS_CHECK(axis >= -r && axis < r, ValueError, "stack axis ", axis, " is out of range for rank ", r);
  if (axis < 0) axis += r;
  dims.insert(dims.begin() + axis, 1);
  std::vector<Tensor> expanded;
  for (const Tensor& x : xs) {
    LS_CHECK(x.shape() == first, InvalidArgumentError, "stack needs tensors of one shape, got ", first.str(),
             " and ", x.shape().str());
    expanded.push_back(reshape(x, Shape(dims)));
  }
  return concat(expanded, axis);
}

namespace {
void check_index_dtype(const Tensor& indices) {
  LS_CHECK(indices.dtype() == DType::int32 || indices.dtype() == DType::int64, InvalidArgumentError,
           "indices must be int32 or int64, got ", dtype_name(indices.dtype()));
}

// Calls f(i, row) for each index value, after checking it lies in [0, rows).
template <typename F> void for_each_index(const Tensor& indices, int64_t rows, F&& f) {
  check_index_dtype(indices);
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  for (size_t i = 0; i < idx.size(); ++i) {
    LS_CHECK(idx[i] >= 0 && idx[i] < rows, InvalidArgumentError, "index ", idx[i], " at position ", i,
             " is out of range [0, ", rows, ")");
    f(static_cast<int64_t>(i), idx[i]);
  }
}

Shape gathered_shape(const Tensor& indices, const Shape& params) {
  std::vector<int64_t> dims = indices.shape().dims();
  dims.insert(dims.end(), params.dims().begin() + 1, params.dims().end());
  return Shape(dims);
}
}  // namespace

Tensor gather(const Tensor& params, const Tensor& indices) {
  LS_CHECK(params.rank() >= 1, InvalidArgumentError, "gather needs params of rank >= 1");
  Tensor p = params.to(detail::op_device({&params, &indices})).contiguous();
  Tensor out = Tensor::empty(gathered_shape(indices, p.shape()), p.dtype(), p.device());
  const size_t row = static_cast<size_t>(p.numel() / std::max<int64_t>(p.dim(0), 1)) * dtype_size(p.dtype());
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(p.device())) {
    check_index_dtype(indices);
    const Tensor i = indices.to(p.device()).contiguous();
    kernels::cuda::gather_rows(i.dtype(), i.device_data(), i.numel(), p.device_data(), p.dim(0), row,
                               out.device_data());
    return out;
  }
#endif
  for_each_index(indices, p.dim(0), [&](int64_t i, int64_t r) {
    std::memcpy(static_cast<char*>(out.raw_data()) + static_cast<size_t>(i) * row,
                static_cast<const char*>(p.raw_data()) + static_cast<size_t>(r) * row, row);
  });
  return out;
}

Tensor scatter_add_rows(const Tensor& dy, const Tensor& indices, const Shape& params_shape) {
  LS_CHECK(dy.shape() == gathered_shape(indices, params_shape), InvalidArgumentError, "scatter_add_rows: dy of shape ",
           dy.shape().str(), " does not match indices ", indices.shape().str(), " and params ", params_shape.str());
  Tensor g = dy.contiguous();
  const int64_t row = params_shape.numel() / std::max<int64_t>(params_shape.dims()[0], 1);
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(g.device())) {
    check_index_dtype(indices);
    Tensor out = Tensor::empty(params_shape, dy.dtype(), g.device());
    const Tensor i = indices.to(g.device()).contiguous();
    kernels::cuda::scatter_add_rows(g.dtype(), i.dtype(), i.device_data(), i.numel(), g.device_data(),
                                    params_shape.dims()[0], row, out.device_data());
    return out;
  }
#endif
  Tensor out = zeros(params_shape, dy.dtype());
  visit_dtype(dy.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      T* o = out.data<T>();
      const T* s = g.data<T>();
      for_each_index(indices, params_shape.dims()[0], [&](int64_t i, int64_t r) {
        for (int64_t j = 0; j < row; ++j) o[r * row + j] += s[i * row + j];
      });
    } else {
      throw InvalidArgumentError(make_message("scatter_add_rows does not support ", dtype_name(dy.dtype())));
    }
  });
  return out;
}

Tensor one_hot(const Tensor& indices, int64_t depth, double on_value, double off_value, DType dtype) {
  LS_CHECK(depth >= 0, InvalidArgumentError, "one_hot depth must be >= 0, got ", depth);
  LS_CHECK(indices.dtype() == DType::int32 || indices.dtype() == DType::int64 || indices.dtype() == DType::uint8,
           InvalidArgumentError, "one_hot indices must be integers, got ", dtype_name(indices.dtype()));
  std::vector<int64_t> dims = indices.shape().dims();
  dims.push_back(depth);
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(indices.device())) {
    Tensor out = Tensor::empty(Shape(dims), dtype, indices.device());
    const Tensor i = (indices.dtype() == DType::uint8 ? cast(indices, DType::int32) : indices).contiguous();
    kernels::cuda::one_hot(i.dtype(), i.device_data(), i.numel(), depth, dtype, on_value, off_value,
                           out.device_data());
    return out;
  }
#endif
  Tensor out = full(Shape(dims), off_value, dtype);
  Tensor on = full({}, on_value, dtype);
  const size_t esize = dtype_size(dtype);
  std::vector<int64_t> idx = indices.to_vector<int64_t>();
  // Indices outside [0, depth) give a row of off_value, as in TF.
  for (size_t i = 0; i < idx.size(); ++i)
    if (idx[i] >= 0 && idx[i] < depth)
      std::memcpy(static_cast<char*>(out.raw_data()) + (i * static_cast<size_t>(depth) + static_cast<size_t>(idx[i])) * esize,
                  on.raw_data(), esize);
  return out;
}

Tensor pad_slice_grad(const Tensor& dy, const Shape& x_shape, const std::vector<int64_t>& begin) {
  Tensor out = zeros(x_shape, dy.dtype(), dy.device());
  slice(out, begin, dy.shape().dims()).copy_from(dy);
  return out;
}

}  // namespace lockstep::raw_ops
