// Differentiable math, reduction and shape ops: each op's forward and its backward closure side by side.
// Backward closures use these same ops, so an outer tape can differentiate them again.
#include "lockstep/autograd/ops.h"

#include <numeric>

#include "ops-impl.h"

namespace lockstep {

using detail::Grads;
using detail::recorded;
using raw_ops::BinaryOp;
using raw_ops::UnaryOp;

namespace {
// On x's device, so that arithmetic with a constant queues no copy from the host.
Tensor scalar_like(double v, const Tensor& x) { return full({}, v, x.dtype(), x.device()); }
// x where cond is false, else 0; the zero is a broadcast scalar, not a full tensor.
Tensor zero_where(const Tensor& cond, const Tensor& x) { return where(cond, scalar_like(0, x), x); }
}  // namespace

// ---- elementwise binary ----

Tensor add(const Tensor& a, const Tensor& b) {
  return recorded(raw_ops::binary(BinaryOp::add, a, b), {&a, &b}, [sa = a.shape(), sb = b.shape()](const Tensor& dy, auto&) {
    return Grads{sum_to(dy, sa), sum_to(dy, sb)};
  });
}

Tensor subtract(const Tensor& a, const Tensor& b) {
  return recorded(raw_ops::binary(BinaryOp::sub, a, b), {&a, &b}, [sa = a.shape(), sb = b.shape()](const Tensor& dy, auto&) {
    return Grads{sum_to(dy, sa), sum_to(negative(dy), sb)};
  });
}

Tensor multiply(const Tensor& a, const Tensor& b) {
  return recorded(raw_ops::binary(BinaryOp::mul, a, b), {&a, &b}, [a, b](const Tensor& dy, const std::vector<bool>& needs) {
    return Grads{needs[0] ? sum_to(multiply(dy, b), a.shape()) : Tensor(),
                 needs[1] ? sum_to(multiply(dy, a), b.shape()) : Tensor()};
  });
}

Tensor divide(const Tensor& a, const Tensor& b) {
  return recorded(raw_ops::binary(BinaryOp::div, a, b), {&a, &b}, [a, b](const Tensor& dy, const std::vector<bool>& needs) {
    return Grads{needs[0] ? sum_to(divide(dy, b), a.shape()) : Tensor(),
                 needs[1] ? sum_to(negative(divide(multiply(dy, a), multiply(b, b))), b.shape()) : Tensor()};
  });
}

Tensor pow(const Tensor& a, const Tensor& b) {
  Tensor y = raw_ops::binary(BinaryOp::pow, a, b);
  return recorded(y, {&a, &b}, [a, b, y](const Tensor& dy, const std::vector<bool>& needs) {
    Grads g(2);
    if (needs[0]) g[0] = sum_to(multiply(dy, multiply(b, pow(a, subtract(b, scalar_like(1, b))))), a.shape());
    if (needs[1]) {
      // d/db a^b = a^b log a, with log a taken as 0 where a <= 0 (as TF does) so that log's NaN does not leak in;
      // a^b itself still multiplies, so NaN and Inf in it reach the gradient as in TF.
      Tensor positive = greater(a, scalar_like(0, a));
      Tensor log_a = where(positive, log(where(positive, a, ones_like(a))), scalar_like(0, a));
      g[1] = sum_to(multiply(dy, multiply(y, log_a)), b.shape());
    }
    return g;
  });
}

namespace {
// Gradient of maximum/minimum: dy goes to a where `a_wins`, else to b.
Tensor select_binary(BinaryOp op, BinaryOp a_wins_op, const Tensor& a, const Tensor& b) {
  return recorded(raw_ops::binary(op, a, b), {&a, &b}, [a, b, a_wins_op](const Tensor& dy, auto&) {
    Tensor a_wins = raw_ops::binary(a_wins_op, a, b);
    return Grads{sum_to(zero_where(raw_ops::unary(UnaryOp::logical_not, a_wins), dy), a.shape()),
                 sum_to(zero_where(a_wins, dy), b.shape())};
  });
}
}  // namespace

Tensor maximum(const Tensor& a, const Tensor& b) { return select_binary(BinaryOp::maximum, BinaryOp::greater_equal, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return select_binary(BinaryOp::minimum, BinaryOp::less_equal, a, b); }

// ---- elementwise unary ----

Tensor negative(const Tensor& x) {
  return recorded(raw_ops::unary(UnaryOp::neg, x), {&x}, [](const Tensor& dy, auto&) { return Grads{negative(dy)}; });
}

Tensor exp(const Tensor& x) {
  Tensor y = raw_ops::unary(UnaryOp::exp, x);
  return recorded(y, {&x}, [y](const Tensor& dy, auto&) { return Grads{multiply(dy, y)}; });
}

Tensor log(const Tensor& x) {
  return recorded(raw_ops::unary(UnaryOp::log, x), {&x}, [x](const Tensor& dy, auto&) { return Grads{divide(dy, x)}; });
}

Tensor sqrt(const Tensor& x) {
  Tensor y = raw_ops::unary(UnaryOp::sqrt, x);
  return recorded(y, {&x}, [y](const Tensor& dy, auto&) {
    return Grads{divide(multiply(dy, scalar_like(0.5, y)), y)};
  });
}

Tensor rsqrt(const Tensor& x) {
  Tensor y = raw_ops::unary(UnaryOp::rsqrt, x);
  return recorded(y, {&x}, [x, y](const Tensor& dy, auto&) {
    return Grads{multiply(dy, multiply(scalar_like(-0.5, y), divide(y, x)))};
  });
}

Tensor square(const Tensor& x) {
  return recorded(raw_ops::unary(UnaryOp::square, x), {&x}, [x](const Tensor& dy, auto&) {
    return Grads{multiply(dy, multiply(scalar_like(2, x), x))};
  });
}

Tensor abs(const Tensor& x) {
  return recorded(raw_ops::unary(UnaryOp::abs, x), {&x}, [x](const Tensor& dy, auto&) {
    return Grads{multiply(dy, sign(x))};
  });
}

Tensor sign(const Tensor& x) {
  return recorded(raw_ops::unary(UnaryOp::sign, x), {&x}, [](const Tensor& dy, auto&) { return Grads{zeros_like(dy)}; });
}

Tensor sigmoid(const Tensor& x) {
  Tensor y = raw_ops::unary(UnaryOp::sigmoid, x);
  return recorded(y, {&x}, [y](const Tensor& dy, auto&) {
    return Grads{multiply(dy, multiply(y, subtract(scalar_like(1, y), y)))};
  });
}

Tensor tanh(const Tensor& x) {
  Tensor y = raw_ops::unary(UnaryOp::tanh, x);
  return recorded(y, {&x}, [y](const Tensor& dy, auto&) {
    return Grads{multiply(dy, subtract(scalar_like(1, y), multiply(y, y)))};
  });
}

Tensor add_n(const std::vector<Tensor>& xs) {
  LS_CHECK(!xs.empty(), InvalidArgumentError, "add_n needs at least one tensor");
  Tensor total = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    LS_CHECK(xs[i].shape() == xs[0].shape(), InvalidArgumentError, "add_n needs tensors of one shape, got ",
             xs[0].shape().str(), " and ", xs[i].shape().str());
    total = add(total, xs[i]);
  }
  return total;
}

// ---- comparisons, selection, casts ----

Tensor equal(const Tensor& a, const Tensor& b) { return raw_ops::binary(BinaryOp::equal, a, b); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return raw_ops::binary(BinaryOp::not_equal, a, b); }
Tensor less(const Tensor& a, const Tensor& b) { return raw_ops::binary(BinaryOp::less, a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return raw_ops::binary(BinaryOp::less_equal, a, b); }
Tensor greater(const Tensor& a, const Tensor& b) { return raw_ops::binary(BinaryOp::greater, a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return raw_ops::binary(BinaryOp::greater_equal, a, b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return recorded(raw_ops::where(cond, a, b), {&a, &b}, [cond, sa = a.shape(), sb = b.shape()](const Tensor& dy, auto&) {
    Tensor zero = scalar_like(0, dy);
    return Grads{sum_to(where(cond, dy, zero), sa), sum_to(where(cond, zero, dy), sb)};
  });
}

Tensor cast(const Tensor& x, DType dtype) {
  return recorded(raw_ops::cast(x, dtype), {&x}, [from = x.dtype(), dtype](const Tensor& dy, auto&) {
    // Only casts between floating types carry a gradient.
    return Grads{is_floating(from) && is_floating(dtype) ? cast(dy, from) : Tensor()};
  });
}

Tensor stop_gradient(const Tensor& x) {
  return Tensor(x.storage(), x.shape(), x.strides(), x.offset(), x.dtype());  // a new id that no tape knows
}

// ---- reductions ----

namespace {
// dy of a reduction over `axes`, reshaped with the reduced axes kept and broadcast back to x's shape.
Tensor expand_reduced(const Tensor& dy, const Shape& x_shape, const std::vector<int64_t>& axes) {
  std::vector<int64_t> kept = x_shape.dims();
  for (int64_t a : raw_ops::normalize_axes(x_shape, axes)) kept[static_cast<size_t>(a)] = 1;
  return broadcast_to(reshape(dy, Shape(kept)), x_shape);
}
int64_t reduced_count(const Shape& x_shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (int64_t a : raw_ops::normalize_axes(x_shape, axes)) n *= x_shape[a];
  return n;
}
}  // namespace

Tensor reduce_sum(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return recorded(raw_ops::sum(x, axes, keepdims), {&x}, [s = x.shape(), axes](const Tensor& dy, auto&) {
    return Grads{expand_reduced(dy, s, axes)};
  });
}

Tensor reduce_mean(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  return recorded(raw_ops::mean(x, axes, keepdims), {&x}, [s = x.shape(), axes](const Tensor& dy, auto&) {
    return Grads{divide(expand_reduced(dy, s, axes), scalar_like(static_cast<double>(reduced_count(s, axes)), dy))};
  });
}

Tensor reduce_max(const Tensor& x, const std::vector<int64_t>& axes, bool keepdims) {
  Tensor y = raw_ops::max(x, axes, keepdims);
  return recorded(y, {&x}, [x, y, axes](const Tensor& dy, auto&) {
    Tensor at_max = cast(equal(x, expand_reduced(y, x.shape(), axes)), x.dtype());
    Tensor ties = expand_reduced(raw_ops::sum(at_max, axes, false), x.shape(), axes);
    return Grads{divide(multiply(at_max, expand_reduced(dy, x.shape(), axes)), ties)};
  });
}

Tensor argmax(const Tensor& x, int64_t axis) { return raw_ops::argmax(x, axis); }

// ---- shapes ----

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  return recorded(raw_ops::broadcast_to(x, shape), {&x}, [s = x.shape()](const Tensor& dy, auto&) {
    return Grads{sum_to(dy, s)};
  });
}

Tensor sum_to(const Tensor& x, const Shape& shape) {
  return recorded(raw_ops::sum_to(x, shape), {&x}, [s = x.shape()](const Tensor& dy, auto&) {
    return Grads{broadcast_to(dy, s)};
  });
}

Tensor reshape(const Tensor& x, const Shape& shape) {
  return recorded(raw_ops::reshape(x, shape), {&x}, [s = x.shape()](const Tensor& dy, auto&) {
    return Grads{reshape(dy, s)};
  });
}

Tensor transpose(const Tensor& x, const std::vector<int64_t>& perm_in) {
  std::vector<int64_t> perm = perm_in;
  if (perm.empty()) {
    perm.resize(static_cast<size_t>(x.rank()));
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return recorded(raw_ops::transpose(x, perm), {&x}, [x, perm](const Tensor& dy, auto&) {
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(x.shape().normalize_axis(perm[i]))] = static_cast<int64_t>(i);
    return Grads{transpose(dy, inverse)};
  });
}

namespace {
// The backwards of slice and gather are recorded ops too, so that a gradient of a gradient flows through them: each
// one's own gradient is the op it undoes.
Tensor pad_slice_grad(const Tensor& dy, const Shape& shape, const std::vector<int64_t>& begin) {
  return recorded(raw_ops::pad_slice_grad(dy, shape, begin), {&dy}, [begin, size = dy.shape()](const Tensor& ddy, auto&) {
    return Grads{slice(ddy, begin, size.dims())};
  });
}

Tensor scatter_add_rows(const Tensor& dy, const Tensor& indices, const Shape& shape) {
  return recorded(raw_ops::scatter_add_rows(dy, indices, shape), {&dy}, [indices](const Tensor& ddy, auto&) {
    return Grads{gather(ddy, indices)};
  });
}
}  // namespace

Tensor slice(const Tensor& x, const std::vector<int64_t>& begin, const std::vector<int64_t>& size) {
  return recorded(raw_ops::slice(x, begin, size), {&x}, [s = x.shape(), begin](const Tensor& dy, auto&) {
    return Grads{pad_slice_grad(dy, s, begin)};
  });
}

namespace {
// Records y = concatenation of xs along `axis`, each x taking `extent` positions of it (its own extent when
// -1, else `extent` with x reshaped): backward gives each input its slice of dy.
void record_concatenation(const std::vector<Tensor>& xs, const Tensor& y, int64_t axis, int64_t extent) {
  std::vector<const Tensor*> inputs;
  for (const Tensor& x : xs) inputs.push_back(&x);
  if (!GradientTape::should_record(inputs)) return;
  std::vector<Shape> shapes;
  for (const Tensor& x : xs) shapes.push_back(x.shape());
  GradientTape::record(inputs, y, [shapes, axis, extent](const Tensor& dy, const std::vector<bool>& needs) {
    Grads g(shapes.size());
    std::vector<int64_t> begin(static_cast<size_t>(dy.rank()), 0), size = dy.shape().dims();
    for (size_t i = 0; i < shapes.size(); ++i) {
      size[static_cast<size_t>(axis)] = extent < 0 ? shapes[i][axis] : extent;
      if (needs[i]) g[i] = reshape(slice(dy, begin, size), shapes[i]);
      begin[static_cast<size_t>(axis)] += size[static_cast<size_t>(axis)];
    }
    return g;
  });
}
}  // namespace

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  Tensor y = raw_ops::concat(xs, axis);
  record_concatenation(xs, y, y.shape().normalize_axis(axis), -1);
  return y;
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  Tensor y = raw_ops::stack(xs, axis);
  record_concatenation(xs, y, y.shape().normalize_axis(axis), 1);
  return y;
}

Tensor gather(const Tensor& params, const Tensor& indices) {
  return recorded(raw_ops::gather(params, indices), {&params}, [s = params.shape(), indices](const Tensor& dy, auto&) {
    return Grads{scatter_add_rows(dy, indices, s)};
  });
}

Tensor one_hot(const Tensor& indices, int64_t depth, double on_value, double off_value, DType dtype) {
  return raw_ops::one_hot(indices, depth, on_value, off_value, dtype);
}

// ---- linear algebra ----

// The gradient of matmul's input `input` (of shape `shape`): op(x) @ op(y), summed over broadcast batch axes. Written
// straight into the input's gradient destination when there is one and nothing needs to be summed or recorded.
static Tensor product_gradient(size_t input, const Shape& shape, const Tensor& x, const Tensor& y, bool tx, bool ty) {
  const Tensor& into = detail::gradient_destination(input);
  if (into.defined() && x.rank() == 2 && y.rank() == 2 && into.shape() == shape && into.dtype() == x.dtype() &&
      into.device() == x.device() && into.device() == y.device() && !GradientTape::should_record({&x, &y}))
    return raw_ops::matmul(x, y, tx, ty, into);
  return sum_to(matmul(x, y, tx, ty), shape);
}

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  return recorded(raw_ops::matmul(a, b, ta, tb), {&a, &b}, [a, b, ta, tb](const Tensor& dy, const std::vector<bool>& needs) {
    // TF's rules: with C = op(A) op(B), dA and dB are products of dy with the other operand.
    Grads g(2);
    if (needs[0])
      g[0] = ta ? product_gradient(0, a.shape(), b, dy, tb, true) : product_gradient(0, a.shape(), dy, b, false, !tb);
    if (needs[1])
      g[1] = tb ? product_gradient(1, b.shape(), dy, a, true, ta) : product_gradient(1, b.shape(), a, dy, !ta, false);
    return g;
  });
}

// ---- operators ----

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return subtract(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return multiply(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return divide(a, b); }
Tensor operator-(const Tensor& x) { return negative(x); }
Tensor operator+(const Tensor& a, double b) { return add(a, scalar_like(b, a)); }
Tensor operator-(const Tensor& a, double b) { return subtract(a, scalar_like(b, a)); }
Tensor operator*(const Tensor& a, double b) { return multiply(a, scalar_like(b, a)); }
Tensor operator/(const Tensor& a, double b) { return divide(a, scalar_like(b, a)); }
Tensor operator+(double a, const Tensor& b) { return add(scalar_like(a, b), b); }
Tensor operator-(double a, const Tensor& b) { return subtract(scalar_like(a, b), b); }
Tensor operator*(double a, const Tensor& b) { return multiply(scalar_like(a, b), b); }
Tensor operator/(double a, const Tensor& b) { return divide(scalar_like(a, b), b); }

}  // namespace lockstep
