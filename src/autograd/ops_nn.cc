// Differentiable neural-network ops (tf.nn): activations, softmax, convolution, pooling, cross-entropy, and Keras'
// resize_images. The fused ones have hand-written backward kernels; their gradients are first order only.
#include <algorithm>
#include <cmath>

#include "lockstep/autograd/ops.h"
#include "ops-impl.h"

namespace lockstep::nn {

using detail::Grads;
using detail::recorded;

Tensor relu(const Tensor& x) {
  Tensor y = raw_ops::unary(raw_ops::UnaryOp::relu, x);
  return recorded(y, {&x}, [y](const Tensor& dy, auto&) {
    if (GradientTape::should_record({&dy, &y}))  // an outer tape differentiates this gradient: recorded ops
      return Grads{where(greater(y, full({}, 0, y.dtype(), y.device())), dy, full({}, 0, dy.dtype(), dy.device()))};
    return Grads{raw_ops::binary(raw_ops::BinaryOp::relu_grad, dy, y)};  // one pass instead of a mask and a select
  });
}

Tensor l2_loss(const Tensor& x) {
  Tensor y = raw_ops::binary(raw_ops::BinaryOp::div, raw_ops::sum_of_squares(x), full({}, 2, x.dtype(), x.device()));
  return recorded(y, {&x}, [x](const Tensor& dy, auto&) { return Grads{multiply(x, dy)}; });
}

Tensor sigmoid(const Tensor& x) { return lockstep::sigmoid(x); }
Tensor tanh(const Tensor& x) { return lockstep::tanh(x); }

Tensor softmax(const Tensor& logits, int64_t axis) {
  Tensor y = raw_ops::softmax(logits, axis);
  return recorded(y, {&logits}, [y, axis](const Tensor& dy, auto&) {
    return Grads{raw_ops::softmax_backward(y, dy, axis, false)};
  });
}

Tensor log_softmax(const Tensor& logits, int64_t axis) {
  Tensor y = raw_ops::log_softmax(logits, axis);
  return recorded(y, {&logits}, [y, axis](const Tensor& dy, auto&) {
    return Grads{raw_ops::softmax_backward(y, dy, axis, true)};
  });
}

Tensor conv2d(const Tensor& x, const Tensor& filters, const Tensor& bias, const Conv2dParams& options) {
  Tensor y = raw_ops::conv2d(x, filters, bias, options);
  return recorded(y, {&x, &filters, &bias}, [x, filters, with_bias = bias.defined(), options](
                                                 const Tensor& dy, const std::vector<bool>& needs) {
    Grads g(3);
    if (needs[0]) g[0] = raw_ops::conv2d_backward_data(dy, filters, x.shape(), options);
    if (needs[1] || needs[2]) {
      auto [dw, db] = raw_ops::conv2d_backward_weights(x, dy, filters.shape(), with_bias, options);
      g[1] = dw;
      g[2] = db;
    }
    return g;
  });
}

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options) {
  Tensor workspace;
  Tensor y = raw_ops::max_pool2d(x, options, &workspace);
  return recorded(y, {&x}, [x, workspace, options](const Tensor& dy, auto&) {
    return Grads{raw_ops::max_pool2d_backward(dy, x, workspace, options)};
  });
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options) {
  return recorded(raw_ops::avg_pool2d(x, options), {&x}, [s = x.shape(), options](const Tensor& dy, auto&) {
    return Grads{raw_ops::avg_pool2d_backward(dy, s, options)};
  });
}

Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  Tensor probs;
  Tensor loss = raw_ops::sparse_softmax_cross_entropy_with_logits(labels, logits, &probs);
  return recorded(loss, {&logits}, [probs, labels](const Tensor& dy, auto&) {
    return Grads{raw_ops::sparse_softmax_cross_entropy_backward(probs, labels, dy)};
  });
}

namespace {
// Bilinear interpolation along axis 0 of t, from `in` rows to `out`: each output row mixes two input rows as
// tf.image.resize does, with its source coordinate computed in float32 like TF's kernel.
Tensor lerp_rows(const Tensor& t, int64_t in, int64_t out) {
  std::vector<int64_t> lower(static_cast<size_t>(out)), upper(static_cast<size_t>(out));
  std::vector<float> weight(static_cast<size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (size_t i = 0; i < lower.size(); ++i) {
    const float x = (static_cast<float>(i) + 0.5f) * scale - 0.5f, floor = std::floor(x);
    lower[i] = std::max(static_cast<int64_t>(floor), int64_t{0});
    upper[i] = std::min(static_cast<int64_t>(std::ceil(x)), in - 1);
    weight[i] = x - floor;
  }
  std::vector<int64_t> weight_shape(static_cast<size_t>(t.rank()), 1);
  weight_shape[0] = out;
  const Tensor top = gather(t, from_vector(lower, Shape{out})), bottom = gather(t, from_vector(upper, Shape{out}));
  return top + (bottom - top) * raw_ops::cast(from_vector(weight, Shape(weight_shape)), t.dtype());
}
}  // namespace

Tensor resize_images(const Tensor& x, int64_t height_factor, int64_t width_factor, const std::string& interpolation) {
  LS_CHECK(x.rank() == 4, InvalidArgumentError,
           "resize_images: x must be images [batch, height, width, channels], got shape ", x.shape().str());
  LS_CHECK(height_factor > 0 && width_factor > 0, InvalidArgumentError,
           "resize_images: the factors must be positive, got ", height_factor, " and ", width_factor);
  LS_CHECK(interpolation == "nearest" || interpolation == "bilinear", ValueError, "resize_images: interpolation \"",
           interpolation, "\" is not supported; use \"nearest\" or \"bilinear\"");
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  if (interpolation == "nearest") {  // a broadcast over two new axes, whose gradient sums them back
    const Tensor repeated = broadcast_to(reshape(x, {n, h, 1, w, 1, c}), {n, h, height_factor, w, width_factor, c});
    return reshape(repeated, {n, h * height_factor, w * width_factor, c});
  }
  // Along the width first, then the height, as TF's kernel mixes them.
  const Tensor wide = lerp_rows(transpose(x, {2, 0, 1, 3}), w, w * width_factor);      // [w', n, h, c]
  const Tensor tall = lerp_rows(transpose(wide, {2, 1, 0, 3}), h, h * height_factor);  // [h', n, w', c]
  return transpose(tall, {1, 0, 2, 3});
}

}  // namespace lockstep::nn
