// Tensor ops without gradients (TF: tf.raw_ops). The differentiable ops users call are in
// lockstep/autograd/ops.h and wrap these. Binary ops broadcast as NumPy does and need equal dtypes.
// Inputs may be strided views; results are contiguous. float32 runs on oneDNN or vectorised loops,
// float64 (used for finite-difference tests) on the reference kernels.
#pragma once
#include <string>
#include <vector>

#include "lockstep/core/philox.h"
#include "lockstep/kernels/cpu/loops.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep {

// ---- factories ----
// On the CPU unless `device` says otherwise; the *_like factories use x's device.
Tensor zeros(const Shape& shape, DType dtype = DType::float32, Device device = {});
Tensor ones(const Shape& shape, DType dtype = DType::float32, Device device = {});
Tensor full(const Shape& shape, double value, DType dtype = DType::float32, Device device = {});
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
// A scalar (rank-0) tensor.
Tensor scalar(double value, DType dtype = DType::float32);
// [start, limit) in steps of delta, as tf.range.
Tensor arange(double start, double limit, double delta = 1, DType dtype = DType::int64);
// Copies `values` (row-major) into a new tensor; values.size() must equal shape.numel().
template <typename T> Tensor from_vector(const std::vector<T>& values, const Shape& shape);
Tensor from_data(const void* data, const Shape& shape, DType dtype);
// Draws from `rng` in row-major order (same values on every worker for the same state).
Tensor random_uniform(const Shape& shape, Philox& rng, double minval = 0, double maxval = 1,
                      DType dtype = DType::float32);
Tensor random_normal(const Shape& shape, Philox& rng, double mean = 0, double stddev = 1,
                     DType dtype = DType::float32);
Tensor truncated_normal(const Shape& shape, Philox& rng, double mean = 0, double stddev = 1,
                        DType dtype = DType::float32);

namespace raw_ops {

// ---- elementwise ----
using BinaryOp = kernels::cpu::Binary;
using UnaryOp = kernels::cpu::Unary;
// Comparisons and logical ops return bool.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor unary(UnaryOp op, const Tensor& x);
// cond ? a : b, all three broadcast together; cond is bool.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor cast(const Tensor& x, DType dtype);

// ---- reductions over `axes` (empty = all), negative axes allowed ----
// The axes normalised to [0, rank), sorted and unique; empty means all.
std::vector<int64_t> normalize_axes(const Shape& shape, const std::vector<int64_t>& axes);
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
// sum(x * x) in one pass, each square rounded as x * x is.
Tensor sum_of_squares(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
// Index of the largest value along `axis` (first on ties), int64.
Tensor argmax(const Tensor& x, int64_t axis);
// Sums x down to `shape` (the reverse of broadcasting): how gradients of broadcast inputs are formed.
Tensor sum_to(const Tensor& x, const Shape& shape);
Tensor broadcast_to(const Tensor& x, const Shape& shape);

// ---- shape ----
// One dimension may be -1 (inferred). A view when x is contiguous.
Tensor reshape(const Tensor& x, const Shape& shape);
// Axes permuted: result dim i = x dim perm[i]. A view (strided); ops accept it as is.
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm);
// x[begin : begin + size] per axis, size -1 meaning "to the end" (tf.slice). A view.
Tensor slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
Tensor stack(const std::vector<Tensor>& xs, int64_t axis);
// Rows of `params` (axis 0) picked by integer `indices`: shape indices.shape + params.shape[1:].
Tensor gather(const Tensor& params, const Tensor& indices);
// dx for gather: dy rows added into a zero tensor of params_shape at `indices`.
Tensor scatter_add_rows(const Tensor& dy, const Tensor& indices, const Shape& params_shape);
Tensor one_hot(const Tensor& indices, int64_t depth, double on_value = 1, double off_value = 0,
               DType dtype = DType::float32);
// The gradient of slice: zeros of x_shape with dy written at x[begin : begin + dy.shape].
Tensor pad_slice_grad(const Tensor& dy, const Shape& x_shape, const std::vector<int64_t>& begin);

// ---- linear algebra and neural-network kernels (float32 on oneDNN; float64 on reference kernels) ----
// op(a) @ op(b) over the last two axes; leading (batch) axes broadcast. Ranks >= 2. Written into `into` when it is
// given (contiguous, of the product's shape, dtype and device; else InvalidArgumentError), which is returned.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false,
              const Tensor& into = Tensor());

enum class Padding { valid, same };
Padding padding_from_name(const std::string& name);  // "valid"/"same", any case
// The op's own parameters (keras::layers::Conv2DOptions is the layer's, with Keras' names).
struct Conv2dParams {
  int64_t stride_h = 1, stride_w = 1;
  Padding padding = Padding::valid;
};
// x NHWC, filters HWIO (Keras' layouts), bias [O] or undefined. Result NHWC.
Tensor conv2d(const Tensor& x, const Tensor& filters, const Tensor& bias, const Conv2dParams& opt);
Tensor conv2d_backward_data(const Tensor& dy, const Tensor& filters, const Shape& x_shape, const Conv2dParams& opt);
// Returns {dfilters, dbias}; dbias is undefined when with_bias is false.
std::pair<Tensor, Tensor> conv2d_backward_weights(const Tensor& x, const Tensor& dy, const Shape& filter_shape,
                                                  bool with_bias, const Conv2dParams& opt);

struct Pool2dOptions {
  int64_t pool_h = 2, pool_w = 2;
  int64_t stride_h = 2, stride_w = 2;
  Padding padding = Padding::valid;
};
// x NHWC. max_pool2d can return the workspace its backward needs (opaque bytes).
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& opt, Tensor* workspace = nullptr);
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& x, const Tensor& workspace, const Pool2dOptions& opt);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& opt);
Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dOptions& opt);

// Softmax along `axis`; log_softmax computed stably, not as log(softmax).
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);
// dx from y = softmax(x) (or log_softmax when log is true) and dy.
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t axis, bool log);

// Per-example -log softmax(logits)[label]; logits [N, C] float, labels [N] int32/int64 in [0, C).
// Also returns softmax(logits) for the backward pass when `probs` is given.
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits, Tensor* probs = nullptr);
// dlogits = (probs - one_hot(labels)) * dloss[:, None].
Tensor sparse_softmax_cross_entropy_backward(const Tensor& probs, const Tensor& labels, const Tensor& dloss);

}  // namespace raw_ops
}  // namespace lockstep
