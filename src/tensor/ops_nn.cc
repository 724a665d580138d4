// Matmul, convolution, pooling, softmax and cross-entropy: shape checks and dispatch to oneDNN (float32)
// or the reference kernels (float64).
#include <algorithm>
#include <cctype>
#include <numeric>
#include <tuple>

#include "lockstep/kernels/cpu/kernels.h"
#include "lockstep/kernels/cpu/reference.h"
#include "lockstep/kernels/cuda/kernels.h"
#include "lockstep/tensor/ops.h"
#include "ops-impl.h"

namespace lockstep::raw_ops {

namespace cpu = kernels::cpu;
namespace ref = kernels::ref;
namespace cuda = kernels::cuda;

namespace {

void check_float(const char* op, const Tensor& x) {
  LS_CHECK(x.dtype() == DType::float32 || x.dtype() == DType::float64, InvalidArgumentError, op,
           " needs float32 or float64 tensors, got ", dtype_name(x.dtype()), ": cast to float32 first");
}

// Padding before and after along one axis for TF's "SAME" (output = ceil(in / stride)) or "VALID".
std::pair<int64_t, int64_t> padding_for(Padding p, int64_t in, int64_t k, int64_t stride) {
  if (p == Padding::valid) return {0, 0};
  int64_t out = (in + stride - 1) / stride;
  int64_t total = std::max<int64_t>((out - 1) * stride + k - in, 0);
  return {total / 2, total - total / 2};
}

cpu::Conv2dShape conv_shape(const Shape& x, const Shape& w, const Conv2dParams& o) {
  LS_CHECK(x.rank() == 4, InvalidArgumentError, "conv2d input must be NHWC (rank 4), got shape ", x.str());
  LS_CHECK(w.rank() == 4, InvalidArgumentError, "conv2d filters must be HWIO (rank 4), got shape ", w.str());
  LS_CHECK(w[2] == x[3], InvalidArgumentError, "conv2d filters ", w.str(), " expect ", w[2],
           " input channels, but the input ", x.str(), " has ", x[3]);
  LS_CHECK(o.stride_h >= 1 && o.stride_w >= 1, InvalidArgumentError, "conv2d strides must be >= 1");
  auto [pt, pb] = padding_for(o.padding, x[1], w[0], o.stride_h);
  auto [pl, pr] = padding_for(o.padding, x[2], w[1], o.stride_w);
  cpu::Conv2dShape s{x[0], x[1], x[2], x[3], w[0], w[1], w[3], o.stride_h, o.stride_w, pt, pl, pb, pr};
  LS_CHECK(s.out_h() > 0 && s.out_w() > 0, InvalidArgumentError, "conv2d input ", x.str(),
           " is smaller than the ", w[0], "x", w[1], " filter with valid padding: use padding same or a larger input");
  return s;
}

cpu::Pool2dShape pool_shape(const Shape& x, const Pool2dOptions& o, cpu::PoolKind kind) {
  LS_CHECK(x.rank() == 4, InvalidArgumentError, "pooling input must be NHWC (rank 4), got shape ", x.str());
  LS_CHECK(o.pool_h >= 1 && o.pool_w >= 1 && o.stride_h >= 1 && o.stride_w >= 1, InvalidArgumentError,
           "pool size and strides must be >= 1");
  auto [pt, pb] = padding_for(o.padding, x[1], o.pool_h, o.stride_h);
  auto [pl, pr] = padding_for(o.padding, x[2], o.pool_w, o.stride_w);
  cpu::Pool2dShape s{x[0], x[1], x[2], x[3], o.pool_h, o.pool_w, o.stride_h, o.stride_w, pt, pl, pb, pr, kind};
  LS_CHECK(s.out_h() > 0 && s.out_w() > 0, InvalidArgumentError, "pooling input ", x.str(), " is smaller than the ",
           o.pool_h, "x", o.pool_w, " window with valid padding");
  return s;
}

// bfloat16 is computed in float32 and rounded back, as the elementwise ops do (oneDNN 2.6 has no bfloat16
// kernels for AVX2). widen: a bfloat16 tensor as float32, anything else as it is.
Tensor widen(const Tensor& t) { return t.defined() && t.dtype() == DType::bfloat16 ? cast(t, DType::float32) : t; }
Tensor narrow(const Tensor& t) { return cast(t, DType::bfloat16); }

// x's elements on its own device, typed (dtype checked by the caller's visit).
template <typename T> T* device_ptr(const Tensor& x) { return static_cast<T*>(x.device_data()); }

// Calls f(T{}) with float or double for x's dtype.
template <typename F> decltype(auto) visit_float(const char* op, const Tensor& x, F&& f) {
  check_float(op, x);
  return x.dtype() == DType::float32 ? f(float{}) : f(double{});
}

// The same values with `axis` moved last, contiguous, and the permutation that moves it back.
std::pair<Tensor, std::vector<int64_t>> axis_last(const Tensor& x, int64_t axis) {
  std::vector<int64_t> perm(static_cast<size_t>(x.rank()));
  std::iota(perm.begin(), perm.end(), 0);
  std::rotate(perm.begin() + axis, perm.begin() + axis + 1, perm.end());
  std::vector<int64_t> back(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) back[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {transpose(x, perm).contiguous(), back};
}

}  // namespace

Padding padding_from_name(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "valid") return Padding::valid;
  if (s == "same") return Padding::same;
  throw ValueError(make_message("unknown padding '", name, "': use \"valid\" or \"same\""));
}

// An op's result: `into` when given (checked to be contiguous, of `shape`, `dtype` and `device`), else a new tensor.
static Tensor result_tensor(const char* op, const Tensor& into, const Shape& shape, DType dtype, Device device) {
  if (!into.defined()) return Tensor::empty(shape, dtype, device);
  LS_CHECK(into.shape() == shape && into.dtype() == dtype && into.device() == device && into.is_contiguous(),
           InvalidArgumentError, op, ": the output given is ", into.shape().str(), " ", dtype_name(into.dtype()), " on ",
           into.device().str(), into.is_contiguous() ? "" : " (not contiguous)", ", the result is ", shape.str(), " ",
           dtype_name(dtype), " on ", device.str());
  return into;
}

Tensor matmul(const Tensor& a_host, const Tensor& b_host, bool ta, bool tb, const Tensor& into) {
  const Device device = detail::op_device({&a_host, &b_host});
  const Tensor a_in = a_host.to(device), b_in = b_host.to(device);
  if (device.is_gpu() && a_in.dtype() == DType::bfloat16 && b_in.dtype() == DType::bfloat16) {
    // Products of bfloat16 are exact in float32.
    const Tensor product = narrow(matmul(widen(a_in), widen(b_in), ta, tb));
    if (!into.defined()) return product;
    const Tensor out = result_tensor("matmul", into, product.shape(), product.dtype(), device);
    out.copy_from(product);
    return out;
  }
  LS_CHECK(a_in.rank() >= 2 && b_in.rank() >= 2, InvalidArgumentError, "matmul needs tensors of rank >= 2, got ",
           a_in.shape().str(), " and ", b_in.shape().str());
  detail::check_same_dtype("matmul", a_in, b_in);
  if (a_in.dtype() != DType::bfloat16) check_float("matmul", a_in);
  const int64_t m = ta ? a_in.dim(-1) : a_in.dim(-2), k = ta ? a_in.dim(-2) : a_in.dim(-1);
  const int64_t kb = tb ? b_in.dim(-1) : b_in.dim(-2), n = tb ? b_in.dim(-2) : b_in.dim(-1);
  LS_CHECK(k == kb, InvalidArgumentError, "matmul: inner dimensions differ: ", a_in.shape().str(),
           ta ? " (transposed)" : "", " @ ", b_in.shape().str(), tb ? " (transposed)" : "", " has ", k, " vs ", kb);
  std::vector<int64_t> a_batch(a_in.shape().dims().begin(), a_in.shape().dims().end() - 2);
  std::vector<int64_t> b_batch(b_in.shape().dims().begin(), b_in.shape().dims().end() - 2);
  Shape batch = broadcast_shapes(Shape(a_batch), Shape(b_batch));
  // Each operand: one matrix reused (stride 0), or one per batch entry, packed; a transposed view of a
  // packed matrix is read through the transpose flag instead of being copied.
  auto prepare = [&](const Tensor& x, bool& transposed, int64_t& batch_stride) {
    const int64_t rows = x.dim(-2), cols = x.dim(-1);
    Tensor t = x;
    if (Shape(std::vector<int64_t>(x.shape().dims().begin(), x.shape().dims().end() - 2)).numel() == 1) {
      t = x.rank() == 2 ? x : reshape(x, Shape{rows, cols});
      batch_stride = 0;
    } else {
      std::vector<int64_t> full_dims = batch.dims();
      full_dims.push_back(rows);
      full_dims.push_back(cols);
      if (Shape(full_dims) != x.shape()) t = broadcast_to(x, Shape(full_dims));
      batch_stride = rows * cols;
    }
    if (t.is_contiguous()) return t;
    std::vector<int64_t> perm(static_cast<size_t>(t.rank()));
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    Tensor swapped = transpose(t, perm);
    if (swapped.is_contiguous()) {
      transposed = !transposed;
      return swapped;
    }
    return t.contiguous();
  };
  int64_t sa = 0, sb = 0;
  Tensor a = prepare(a_in, ta, sa), b = prepare(b_in, tb, sb);
  std::vector<int64_t> out_dims = batch.dims();
  out_dims.push_back(m);
  out_dims.push_back(n);
  cpu::MatmulShape s{batch.numel(), m, n, k, ta, tb, sa, sb};
  Tensor out = result_tensor("matmul", into, Shape(out_dims), a.dtype(), device);
#if LOCKSTEP_WITH_CUDA
  if (detail::run_on_gpu(device)) {
    visit_float("matmul", a, [&](auto v) {
      using T = decltype(v);
      cuda::matmul<T>(s, static_cast<const T*>(a.device_data()), static_cast<const T*>(b.device_data()),
                      static_cast<T*>(out.device_data()));
    });
    return out;
  }
#endif
  if (a.dtype() == DType::bfloat16) cpu::matmul(s, a.data<bfloat16>(), b.data<bfloat16>(), out.data<bfloat16>());
  else if (a.dtype() == DType::float32) cpu::matmul(s, a.data<float>(), b.data<float>(), out.data<float>());
  else ref::matmul(s, a.data<double>(), b.data<double>(), out.data<double>());
  return out;
}

Tensor conv2d(const Tensor& x, const Tensor& filters, const Tensor& bias, const Conv2dParams& opt) {
  detail::check_same_dtype("conv2d", x, filters);
  if (x.dtype() == DType::bfloat16) return narrow(conv2d(widen(x), widen(filters), widen(bias), opt));
  cpu::Conv2dShape s = conv_shape(x.shape(), filters.shape(), opt);
  if (bias.defined())
    LS_CHECK(bias.rank() == 1 && bias.dim(0) == s.o && bias.dtype() == x.dtype(), InvalidArgumentError,
             "conv2d bias must be [", s.o, "] of ", dtype_name(x.dtype()), ", got ", bias.shape().str());
  const Device device = detail::op_device({&x, &filters, &bias});
  Tensor xc = x.to(device).contiguous(), wc = filters.to(device).contiguous(),
         bc = bias.defined() ? bias.to(device).contiguous() : Tensor();
  Tensor y = Tensor::empty(Shape{s.n, s.out_h(), s.out_w(), s.o}, x.dtype(), device);
  visit_float("conv2d", x, [&](auto v) {
    using T = decltype(v);
#if LOCKSTEP_WITH_CUDA
    if (detail::run_on_gpu(device))
      return cuda::conv2d_forward<T>(s, device_ptr<T>(xc), device_ptr<T>(wc), bc.defined() ? device_ptr<T>(bc) : nullptr,
                                     device_ptr<T>(y));
#endif
    const T* b = bc.defined() ? bc.data<T>() : nullptr;
    if constexpr (std::is_same_v<T, float>) cpu::conv2d_forward(s, xc.data<T>(), wc.data<T>(), b, y.data<T>());
    else ref::conv2d_forward(s, xc.data<T>(), wc.data<T>(), b, y.data<T>());
  });
  return y;
}

Tensor conv2d_backward_data(const Tensor& dy, const Tensor& filters, const Shape& x_shape, const Conv2dParams& opt) {
  if (dy.dtype() == DType::bfloat16) return narrow(conv2d_backward_data(widen(dy), widen(filters), x_shape, opt));
  cpu::Conv2dShape s = conv_shape(x_shape, filters.shape(), opt);
  const Device device = detail::op_device({&dy, &filters});
  Tensor g = dy.to(device).contiguous(), wc = filters.to(device).contiguous();
  Tensor dx = Tensor::empty(x_shape, dy.dtype(), device);
  visit_float("conv2d", dy, [&](auto v) {
    using T = decltype(v);
#if LOCKSTEP_WITH_CUDA
    if (detail::run_on_gpu(device))
      return cuda::conv2d_backward_data<T>(s, device_ptr<T>(g), device_ptr<T>(wc), device_ptr<T>(dx));
#endif
    if constexpr (std::is_same_v<T, float>) cpu::conv2d_backward_data(s, g.data<T>(), wc.data<T>(), dx.data<T>());
    else ref::conv2d_backward_data(s, g.data<T>(), wc.data<T>(), dx.data<T>());
  });
  return dx;
}

std::pair<Tensor, Tensor> conv2d_backward_weights(const Tensor& x, const Tensor& dy, const Shape& filter_shape,
                                                  bool with_bias, const Conv2dParams& opt) {
  if (x.dtype() == DType::bfloat16) {
    auto [dw, db] = conv2d_backward_weights(widen(x), widen(dy), filter_shape, with_bias, opt);
    return {narrow(dw), with_bias ? narrow(db) : db};
  }
  cpu::Conv2dShape s = conv_shape(x.shape(), filter_shape, opt);
  const Device device = detail::op_device({&x, &dy});
  Tensor xc = x.to(device).contiguous(), g = dy.to(device).contiguous();
  Tensor dw = Tensor::empty(filter_shape, x.dtype(), device);
  Tensor db = with_bias ? Tensor::empty(Shape{s.o}, x.dtype(), device) : Tensor();
  visit_float("conv2d", x, [&](auto v) {
    using T = decltype(v);
#if LOCKSTEP_WITH_CUDA
    if (detail::run_on_gpu(device))
      return cuda::conv2d_backward_weights<T>(s, device_ptr<T>(xc), device_ptr<T>(g), device_ptr<T>(dw),
                                              with_bias ? device_ptr<T>(db) : nullptr);
#endif
    T* dbp = with_bias ? db.data<T>() : nullptr;
    if constexpr (std::is_same_v<T, float>) cpu::conv2d_backward_weights(s, xc.data<T>(), g.data<T>(), dw.data<T>(), dbp);
    else ref::conv2d_backward_weights(s, xc.data<T>(), g.data<T>(), dw.data<T>(), dbp);
  });
  return {dw, db};
}

namespace {
Tensor pool_forward(const Tensor& x, const Pool2dOptions& opt, cpu::PoolKind kind, Tensor* workspace) {
  if (x.dtype() == DType::bfloat16) return narrow(pool_forward(widen(x), opt, kind, workspace));
  cpu::Pool2dShape s = pool_shape(x.shape(), opt, kind);
  Tensor xc = x.contiguous();
  Tensor y = Tensor::empty(Shape{s.n, s.out_h(), s.out_w(), s.c}, x.dtype(), x.device());
  visit_float("pooling", x, [&](auto v) {
    using T = decltype(v);
#if LOCKSTEP_WITH_CUDA
    if (detail::run_on_gpu(x.device())) {
      Tensor ws = Tensor::empty(Shape{static_cast<int64_t>(cuda::pool2d_workspace_bytes(s))}, DType::uint8, x.device());
      cuda::pool2d_forward<T>(s, device_ptr<T>(xc), device_ptr<T>(y), ws.device_data());
      if (workspace) *workspace = ws;
      return;
    }
#endif
    if constexpr (std::is_same_v<T, float>) {
      Tensor ws = Tensor::empty(Shape{static_cast<int64_t>(cpu::pool2d_workspace_bytes(s))}, DType::uint8);
      cpu::pool2d_forward(s, xc.data<T>(), y.data<T>(), ws.raw_data());
      if (workspace) *workspace = ws;
    } else {
      ref::pool2d_forward(s, xc.data<T>(), y.data<T>());
    }
  });
  return y;
}

Tensor pool_backward(const Tensor& dy, const Shape& x_shape, const Tensor& x, const Tensor& workspace,
                     const Pool2dOptions& opt, cpu::PoolKind kind) {
  if (dy.dtype() == DType::bfloat16) return narrow(pool_backward(widen(dy), x_shape, widen(x), workspace, opt, kind));
  cpu::Pool2dShape s = pool_shape(x_shape, opt, kind);
  Tensor g = dy.contiguous();
  Tensor dx = Tensor::empty(x_shape, dy.dtype(), dy.device());
  visit_float("pooling", dy, [&](auto v) {
    using T = decltype(v);
#if LOCKSTEP_WITH_CUDA
    if (detail::run_on_gpu(dy.device())) {
      LS_CHECK(kind == cpu::PoolKind::avg || workspace.defined(), InvalidArgumentError,
               "max_pool2d_backward needs the workspace of the forward pass");
      return cuda::pool2d_backward<T>(s, device_ptr<T>(g), workspace.defined() ? workspace.device_data() : nullptr,
                                      device_ptr<T>(dx));
    }
#endif
    if constexpr (std::is_same_v<T, float>) {
      LS_CHECK(kind == cpu::PoolKind::avg || workspace.defined(), InvalidArgumentError,
               "max_pool2d_backward needs the workspace of the forward pass");
      cpu::pool2d_backward(s, g.data<T>(), workspace.defined() ? workspace.raw_data() : nullptr, dx.data<T>());
    } else {
      Tensor xc = x.defined() ? x.contiguous() : Tensor();
      ref::pool2d_backward(s, xc.defined() ? xc.data<T>() : nullptr, g.data<T>(), dx.data<T>());
    }
  });
  return dx;
}
}  // namespace

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& opt, Tensor* workspace) {
  return pool_forward(x, opt, cpu::PoolKind::max, workspace);
}
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& x, const Tensor& workspace, const Pool2dOptions& opt) {
  return pool_backward(dy, x.shape(), x, workspace, opt, cpu::PoolKind::max);
}
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& opt) { return pool_forward(x, opt, cpu::PoolKind::avg, nullptr); }
Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dOptions& opt) {
  return pool_backward(dy, x_shape, Tensor(), Tensor(), opt, cpu::PoolKind::avg);
}

namespace {
Tensor softmax_impl(const Tensor& x, int64_t axis, bool log) {
  if (x.dtype() == DType::bfloat16) return narrow(softmax_impl(widen(x), axis, log));
  axis = x.shape().normalize_axis(axis);
  // Not a structured binding: clang 14 (the fuzz build's compiler) cannot capture one in a lambda.
  Tensor xl;
  std::vector<int64_t> back;
  std::tie(xl, back) = axis_last(x, axis);
  Tensor y = Tensor::empty(xl.shape(), x.dtype(), x.device());
  const int64_t cols = x.dim(axis), rows = x.numel() / std::max<int64_t>(cols, 1);
  visit_float("softmax", x, [&](auto v) {
    using T = decltype(v);
#if LOCKSTEP_WITH_CUDA
    if (detail::run_on_gpu(x.device())) return cuda::softmax_forward<T>(rows, cols, device_ptr<T>(xl), device_ptr<T>(y), log);
#endif
    if constexpr (std::is_same_v<T, float>) cpu::softmax_forward(rows, cols, xl.data<T>(), y.data<T>(), log);
    else ref::softmax_forward(rows, cols, xl.data<T>(), y.data<T>(), log);
  });
  return transpose(y, back).contiguous();
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_impl(x, axis, false); }
Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_impl(x, axis, true); }

Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t axis, bool log) {
  if (y.dtype() == DType::bfloat16) return narrow(softmax_backward(widen(y), widen(dy), axis, log));
  axis = y.shape().normalize_axis(axis);
  Tensor yl;  // not a structured binding, as in softmax_impl
  std::vector<int64_t> back;
  std::tie(yl, back) = axis_last(y, axis);
  Tensor gl = axis_last(dy.to(y.device()), axis).first;
  Tensor dx = Tensor::empty(yl.shape(), y.dtype(), y.device());
  const int64_t cols = y.dim(axis), rows = y.numel() / std::max<int64_t>(cols, 1);
  visit_float("softmax", y, [&](auto v) {
    using T = decltype(v);
#if LOCKSTEP_WITH_CUDA
    if (detail::run_on_gpu(y.device()))
      return cuda::softmax_backward<T>(rows, cols, device_ptr<T>(yl), device_ptr<T>(gl), device_ptr<T>(dx), log);
#endif
    if constexpr (std::is_same_v<T, float>) cpu::softmax_backward(rows, cols, yl.data<T>(), gl.data<T>(), dx.data<T>(), log);
    else ref::softmax_backward(rows, cols, yl.data<T>(), gl.data<T>(), dx.data<T>(), log);
  });
  return transpose(dx, back).contiguous();
}

namespace {
// Calls f(T{}, L{}) for the logits' float type and the labels' integer type.
template <typename F> void visit_xent(const Tensor& labels, const Tensor& logits, F&& f) {
  LS_CHECK(logits.rank() == 2, InvalidArgumentError, "sparse softmax cross-entropy needs logits [batch, classes], got ",
           logits.shape().str());
  LS_CHECK(labels.rank() == 1 && labels.dim(0) == logits.dim(0), InvalidArgumentError,
           "sparse softmax cross-entropy needs one label per row of logits ", logits.shape().str(), ", got labels ",
           labels.shape().str());
  LS_CHECK(labels.dtype() == DType::int32 || labels.dtype() == DType::int64, InvalidArgumentError,
           "labels must be int32 or int64 class indices, got ", dtype_name(labels.dtype()));
  visit_float("sparse softmax cross-entropy", logits, [&](auto t) {
    if (labels.dtype() == DType::int32) f(t, int32_t{});
    else f(t, int64_t{});
  });
}
}  // namespace

Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits, Tensor* probs) {
  const Device device = logits.device();
  Tensor z = logits.contiguous(), l = labels.to(device).contiguous();
  Tensor loss = Tensor::empty(Shape{logits.dim(0)}, logits.dtype(), device);
  Tensor p = Tensor::empty(logits.shape(), logits.dtype(), device);
  visit_xent(labels, logits, [&](auto t, auto lt) {
    using T = decltype(t);
    using L = decltype(lt);
#if LOCKSTEP_WITH_CUDA
    if (detail::run_on_gpu(device))
      return cuda::sparse_softmax_xent_forward<T, L>(z.dim(0), z.dim(1), device_ptr<T>(z), device_ptr<L>(l),
                                                     device_ptr<T>(loss), device_ptr<T>(p));
#endif
    cpu::sparse_softmax_xent_forward<T, L>(z.dim(0), z.dim(1), z.data<T>(), l.data<L>(), loss.data<T>(), p.data<T>());
  });
  if (probs) *probs = p;
  return loss;
}

Tensor sparse_softmax_cross_entropy_backward(const Tensor& probs, const Tensor& labels, const Tensor& dloss) {
  const Device device = probs.device();
  Tensor l = labels.to(device).contiguous(), g = dloss.to(device).contiguous();
  Tensor dz = Tensor::empty(probs.shape(), probs.dtype(), device);
  visit_xent(labels, probs, [&](auto t, auto lt) {
    using T = decltype(t);
    using L = decltype(lt);
#if LOCKSTEP_WITH_CUDA
    if (detail::run_on_gpu(device))
      return cuda::sparse_softmax_xent_backward<T, L>(probs.dim(0), probs.dim(1), device_ptr<T>(probs),
                                                      device_ptr<L>(l), device_ptr<T>(g), device_ptr<T>(dz));
#endif
    cpu::sparse_softmax_xent_backward<T, L>(probs.dim(0), probs.dim(1), probs.data<T>(), l.data<L>(), g.data<T>(),
                                            dz.data<T>());
  });
  return dz;
}

}  // namespace lockstep::raw_ops
