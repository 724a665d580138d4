// Differentiable neural-network ops (tf.nn): activations, softmax, convolution, pooling, cross-entropy.
// The fused ones have hand-written backward kernels; their gradients are first order only.
#include "lockstep/autograd/ops.h"
#include "ops-impl.h"

namespace lockstep::nn {

using detail::Grads;
using detail::recorded;

Tensor relu(const Tensor& x) {
  Tensor y = raw_ops::unary(raw_ops::UnaryOp::relu, x);
  return recorded(y, {&x}, [y](const Tensor& dy, auto&) {
    if (GradientTape::should_record({&dy, &y}))  // an outer tape differentiates this gradient: recorded ops
      return Grads{where(greater(y, scalar(0, y.dtype())), dy, scalar(0, dy.dtype()))};
    return Grads{raw_ops::binary(raw_ops::BinaryOp::relu_grad, dy, y)};  // one pass instead of a mask and a select
  });
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

Tensor conv2d(const Tensor& x, const Tensor& filters, const Tensor& bias, const Conv2dOptions& options) {
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

}  // namespace lockstep::nn
