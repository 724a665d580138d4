// Differentiable ops (TF's tf.* and tf.nn.*): each computes its value with lockstep/tensor/ops.h and, when
// a GradientTape watches an input, records its backward. Binary ops broadcast as NumPy does; a C++ number
// mixed with a tensor takes the tensor's dtype (TF's rule for Python numbers).
#pragma once
#include <string>
#include <vector>

#include "lockstep/autograd/tape.h"
#include "lockstep/tensor/ops.h"

namespace lockstep {

using raw_ops::Conv2dParams;
using raw_ops::Padding;
using raw_ops::Pool2dOptions;

// ---- elementwise math ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor subtract(const Tensor& a, const Tensor& b);
Tensor multiply(const Tensor& a, const Tensor& b);
Tensor divide(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor negative(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor square(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
// Sum of tensors of one shape.
Tensor add_n(const std::vector<Tensor>& xs);

// Comparisons return bool tensors and have no gradient.
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
// cond ? a : b with broadcasting; gradients flow to a and b where chosen.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor cast(const Tensor& x, DType dtype);
// The same values with no gradient flowing back.
Tensor stop_gradient(const Tensor& x);

// ---- reductions (empty axes = all) ----
Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
// Gradient goes to every position equal to the maximum, shared equally between ties (as TF).
Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor argmax(const Tensor& x, int64_t axis = -1);

// ---- shapes ----
Tensor broadcast_to(const Tensor& x, const Shape& shape);
// Sums x down to `shape`, the reverse of broadcasting.
Tensor sum_to(const Tensor& x, const Shape& shape);
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm = {});  // default: reverse the axes
Tensor slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size);
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0);
Tensor gather(const Tensor& params, const Tensor& indices);
Tensor one_hot(const Tensor& indices, int64_t depth, double on_value = 1, double off_value = 0,
               DType dtype = DType::float32);

// ---- sequences ----
// `num` values evenly spaced from start to stop, both included, along a new axis `axis` of the shape start and
// stop broadcast to (tf.linspace): start + i * (stop - start) / (num - 1), with the first exactly start and the
// last exactly stop. Floating dtypes; differentiable in start and stop.
Tensor linspace(const Tensor& start, const Tensor& stop, int64_t num, int64_t axis = 0);

// ---- linear algebra ----
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

namespace nn {
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor softmax(const Tensor& logits, int64_t axis = -1);
Tensor log_softmax(const Tensor& logits, int64_t axis = -1);
// x NHWC, filters HWIO, bias [O] or an undefined Tensor.
Tensor conv2d(const Tensor& x, const Tensor& filters, const Tensor& bias = {}, const Conv2dParams& options = {});
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options = {});
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options = {});
// Per-example loss [N] from integer labels [N] and logits [N, C] (tf.nn.sparse_softmax_cross_entropy_with_logits).
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);
// sum(x ** 2) / 2 over all of x, a scalar (tf.nn.l2_loss), in one pass over x.
Tensor l2_loss(const Tensor& x);
// NHWC images [N, H, W, C] enlarged to [N, H * height_factor, W * width_factor, C] (Keras' backend resize_images,
// UpSampling2D's op): "nearest" repeats each pixel, "bilinear" interpolates as tf.image.resize does (half-pixel
// centers). Composed of differentiable ops.
Tensor resize_images(const Tensor& x, int64_t height_factor, int64_t width_factor,
                     const std::string& interpolation = "nearest");
}  // namespace nn

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);

}  // namespace lockstep
