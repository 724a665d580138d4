"""tf.math: elementwise and reducing ops over lockstep's kernels (gradients recorded by GradientTape)."""
import builtins as _builtins

import numpy as _np

from . import _lockstep, dtypes as _dtypes

_ops = _lockstep.ops
_convert = _ops.convert_to_tensor

add, subtract, multiply, divide = _ops.add, _ops.subtract, _ops.multiply, _ops.divide
truediv = divide
pow = _ops.pow  # noqa: A001
maximum, minimum = _ops.maximum, _ops.minimum
equal, not_equal = _ops.equal, _ops.not_equal
less, less_equal, greater, greater_equal = _ops.less, _ops.less_equal, _ops.greater, _ops.greater_equal
logical_and, logical_or, logical_not = _ops.logical_and, _ops.logical_or, _ops.logical_not
negative, exp, log, sqrt, rsqrt = _ops.negative, _ops.exp, _ops.log, _ops.sqrt, _ops.rsqrt
square, abs, sign = _ops.square, _ops.abs, _ops.sign  # noqa: A001
sigmoid, tanh = _ops.sigmoid, _ops.tanh
add_n = _ops.add_n


def _reduction(op):
    def reduce(input_tensor, axis=None, keepdims=False, name=None):
        return op(input_tensor, axis, keepdims)

    reduce.__name__ = op.__name__
    return reduce


reduce_sum = _reduction(_ops.reduce_sum)
reduce_mean = _reduction(_ops.reduce_mean)
reduce_max = _reduction(_ops.reduce_max)
reduce_min = _reduction(_ops.reduce_min)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    return _ops.cast(_ops.reduce_max(_ops.cast(input_tensor, "float32"), axis, keepdims), "bool")


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    return _ops.cast(_ops.reduce_min(_ops.cast(input_tensor, "float32"), axis, keepdims), "bool")


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    mean = _ops.reduce_mean(input_tensor, axis, True)
    return _ops.reduce_mean(_ops.square(_ops.subtract(input_tensor, mean)), axis, keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    return _ops.sqrt(reduce_variance(input_tensor, axis, keepdims))


def argmax(input, axis=None, output_type=_dtypes.int64, name=None):  # noqa: A002
    out = _ops.argmax(input, 0 if axis is None else int(axis))
    return out if _dtypes.as_dtype(output_type) == _dtypes.int64 else _ops.cast(out, output_type)


def argmin(input, axis=None, output_type=_dtypes.int64, name=None):  # noqa: A002
    return argmax(_ops.negative(input), axis, output_type)


def multiply_no_nan(x, y, name=None):
    return _ops.where(_ops.equal(y, 0), _ops.multiply(y, 0), _ops.multiply(x, y))


def divide_no_nan(x, y, name=None):
    y = _convert(y)
    safe = _ops.where(_ops.equal(y, 0), _ops.add(_ops.multiply(y, 0), 1), y)
    return _ops.where(_ops.equal(y, 0), _ops.multiply(safe, 0), _ops.divide(x, safe))


def squared_difference(x, y, name=None):
    return _ops.square(_ops.subtract(x, y))


def reciprocal(x, name=None):
    return _ops.divide(1.0, x)


def softplus(features, name=None):
    x = _convert(features)
    return _ops.add(_ops.relu(x), _ops.log(_ops.add(_ops.exp(_ops.negative(_ops.abs(x))), 1.0)))


def log_sigmoid(x, name=None):
    return _ops.negative(softplus(_ops.negative(x)))


def is_nan(x, name=None):
    return _ops.not_equal(x, x)


def is_finite(x, name=None):
    x = _convert(x)
    return _ops.logical_and(_ops.equal(x, x), _ops.less(_ops.abs(x), float("inf")))


def is_inf(x, name=None):
    return _ops.equal(_ops.abs(x), float("inf"))


def round(x, name=None):  # noqa: A001  (banker's rounding, as TF's; no gradient)
    x = _convert(x)
    return _ops.convert_to_tensor(_np.round(x.numpy()).astype(x.dtype.as_numpy_dtype))


def floor(x, name=None):
    x = _convert(x)
    return _ops.convert_to_tensor(_np.floor(x.numpy()).astype(x.dtype.as_numpy_dtype))


def ceil(x, name=None):
    x = _convert(x)
    return _ops.convert_to_tensor(_np.ceil(x.numpy()).astype(x.dtype.as_numpy_dtype))


def l2_normalize(x, axis=None, epsilon=1e-12, name=None):
    sq = _ops.reduce_sum(_ops.square(x), axis, True)
    return _ops.multiply(x, _ops.rsqrt(_ops.maximum(sq, epsilon)))


def confusion_matrix(labels, predictions, num_classes=None, weights=None, dtype=_dtypes.int32, name=None):
    labels, predictions = _np.asarray(labels).astype(_np.int64), _np.asarray(predictions).astype(_np.int64)
    n = int(num_classes) if num_classes is not None else int(_builtins.max(labels.max(), predictions.max()) + 1)
    out = _np.zeros((n, n), _dtypes.as_dtype(dtype).as_numpy_dtype)
    _np.add.at(out, (labels, predictions), 1 if weights is None else _np.asarray(weights))
    return _ops.convert_to_tensor(out)


def in_top_k(targets, predictions, k, name=None):
    p, t = _np.asarray(predictions), _np.asarray(targets).astype(_np.int64)
    target_scores = p[_np.arange(len(t)), t]
    return _ops.convert_to_tensor((p > target_scores[:, None]).sum(axis=1) < k)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """The product as a chain of multiplies along each reduced axis, so GradientTape differentiates it (zeros
    included)."""
    x = _convert(input_tensor)
    rank = len(x._shape_tuple)
    axes = list(_builtins.range(rank)) if axis is None else [a % rank for a in ([axis] if isinstance(axis, int) else axis)]
    for a in sorted(axes, reverse=True):
        n = x._shape_tuple[a]
        out = None
        for i in _builtins.range(n):
            begin = [0] * len(x._shape_tuple)
            size = list(x._shape_tuple)
            begin[a], size[a] = i, 1
            part = _ops.slice(x, begin, size)
            out = part if out is None else _ops.multiply(out, part)
        if out is None:  # an empty axis: the product is 1
            shape = list(x._shape_tuple)
            shape[a] = 1
            out = _ops.fill(shape, 1, x._dtype)
        x = out if keepdims else _ops.reshape(out, [d for i, d in enumerate(out._shape_tuple) if i != a])
    return x


# ---- ops whose forward is NumPy and whose backward is lockstep ops (so a gradient of a gradient works) ----

def _invalid(message):
    from . import errors

    return errors.InvalidArgumentError(message)


def _numpy_op(forward, inputs, backward=None, dtype=None):
    """forward(*arrays) as a tensor of `dtype` (the first input's by default), recorded on the active tapes with
    backward(dy, y, *inputs) -> one gradient (or None) per input."""
    xs = [_convert(x) for x in inputs]
    y = _convert(_np.asarray(forward(*[x.numpy() for x in xs])), dtype or xs[0].dtype)
    if backward is not None:
        _ops.record_gradient(xs, y, lambda dy: backward(dy, y, *xs))
    return y


def _floating(name, x):
    x = _convert(x)
    if x.dtype.name not in ("float32", "float64", "bfloat16"):
        raise _invalid(f"tf.math.{name} needs a floating-point tensor, got {x.dtype.name}: cast it with tf.cast")
    return x


def _operands(name, x, y, floating=True):
    """The two operands of a binary op, Python data taking the tensor's dtype, as TF's operator conversion."""
    if not hasattr(x, "_shape_tuple") and hasattr(y, "_shape_tuple"):
        y = _convert(y)
        x = _convert(x, dtype_hint=y.dtype)
    else:
        x = _convert(x)
        y = _convert(y, dtype_hint=x.dtype)
    if x.dtype != y.dtype:
        raise _invalid(f"tf.math.{name} needs operands of one dtype, got {x.dtype.name} and {y.dtype.name}: "
                       "cast one with tf.cast")
    if floating:
        _floating(name, x)
    return x, y


def _unbroadcast(g, shape):
    """The gradient g of a broadcast result summed back to an operand's shape."""
    shape = list(shape)
    have = g._shape_tuple
    if have == shape:
        return g
    lead = len(have) - len(shape)
    axes = list(_builtins.range(lead)) + [lead + i for i, d in enumerate(shape) if d == 1 and have[lead + i] != 1]
    return _ops.reshape(_ops.reduce_sum(g, axes, False) if axes else g, shape)


def _unary(name, forward, derivative):
    """An elementwise float op: y = forward(x) in NumPy, dy/dx = derivative(x, y) in lockstep ops."""

    def op(x, name=None):
        x = _floating(op.__name__, x)
        with _np.errstate(all="ignore"):
            return _numpy_op(forward, [x], lambda dy, y, x: [_ops.multiply(dy, derivative(x, y))])

    op.__name__ = op.__qualname__ = name
    return op


def _erf_numpy(x):
    import math

    return _np.vectorize(math.erf, otypes=[_np.float64])(x)


def _lgamma_numpy(x):
    import math

    def one(v):
        if v <= 0 and v == _np.floor(v):
            return _np.inf
        return math.lgamma(v) if _np.isfinite(v) else (_np.inf if v > 0 else _np.nan)

    return _np.vectorize(one, otypes=[_np.float64])(x)


def _polygamma_numpy(n, x):
    """digamma (n=0) or trigamma (n=1): the recurrence up to x >= 8, then the asymptotic series; reflection below 0."""
    x = _np.asarray(x, _np.float64)
    out = _np.zeros_like(x)
    neg = x < 0.5
    pole = (x <= 0) & (x == _np.floor(x))
    z = _np.where(neg, 1.0 - x, x)
    acc = _np.zeros_like(z)
    while True:
        small = z < 8
        if not small.any():
            break
        acc = acc + _np.where(small, 1 / z if n == 0 else 1 / (z * z), 0)
        z = _np.where(small, z + 1, z)
    inv2 = 1 / (z * z)
    if n == 0:
        series = _np.log(z) - 0.5 / z - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240))))
        out = series - acc
        with _np.errstate(all="ignore"):
            out = _np.where(neg, out - _np.pi / _np.tan(_np.pi * x), out)
        return _np.where(pole, _np.nan, out)
    series = 1 / z + 0.5 * inv2 + inv2 / z * (1 / 6 - inv2 * (1 / 30 - inv2 * (1 / 42 - inv2 / 30)))
    out = series + acc
    with _np.errstate(all="ignore"):
        out = _np.where(neg, -out + (_np.pi / _np.sin(_np.pi * x)) ** 2, out)
    return _np.where(pole, _np.inf, out)


def _one_minus_square(x):
    return _ops.subtract(1.0, _ops.square(x))


sin = _unary("sin", _np.sin, lambda x, y: cos(x))
cos = _unary("cos", _np.cos, lambda x, y: _ops.negative(sin(x)))
tan = _unary("tan", _np.tan, lambda x, y: _ops.add(_ops.square(y), 1.0))
asin = _unary("asin", _np.arcsin, lambda x, y: _ops.rsqrt(_one_minus_square(x)))
acos = _unary("acos", _np.arccos, lambda x, y: _ops.negative(_ops.rsqrt(_one_minus_square(x))))
atan = _unary("atan", _np.arctan, lambda x, y: _ops.divide(1.0, _ops.add(_ops.square(x), 1.0)))
sinh = _unary("sinh", _np.sinh, lambda x, y: cosh(x))
cosh = _unary("cosh", _np.cosh, lambda x, y: sinh(x))
asinh = _unary("asinh", _np.arcsinh, lambda x, y: _ops.rsqrt(_ops.add(_ops.square(x), 1.0)))
acosh = _unary("acosh", _np.arccosh, lambda x, y: _ops.rsqrt(_ops.subtract(_ops.square(x), 1.0)))
atanh = _unary("atanh", _np.arctanh, lambda x, y: _ops.divide(1.0, _one_minus_square(x)))
log1p = _unary("log1p", _np.log1p, lambda x, y: _ops.divide(1.0, _ops.add(x, 1.0)))
expm1 = _unary("expm1", _np.expm1, lambda x, y: _ops.exp(x))
erf = _unary("erf", _erf_numpy,
             lambda x, y: _ops.multiply(_ops.exp(_ops.negative(_ops.square(x))), 2 / _np.sqrt(_np.pi)))
erfc = _unary("erfc", lambda x: 1.0 - _erf_numpy(x),
              lambda x, y: _ops.multiply(_ops.exp(_ops.negative(_ops.square(x))), -2 / _np.sqrt(_np.pi)))
lgamma = _unary("lgamma", _lgamma_numpy, lambda x, y: digamma(x))
digamma = _unary("digamma", lambda x: _polygamma_numpy(0, x), lambda x, y: _trigamma(x))
_trigamma = _unary("polygamma", lambda x: _polygamma_numpy(1, x), lambda x, y: _no_gradient("polygamma"))


def _no_gradient(name):
    raise NotImplementedError(f"the gradient of tf.math.{name} is not implemented by lockstep (see docs/python.md)")


def softsign(features, name=None):
    x = _floating("softsign", features)
    return _ops.divide(x, _ops.add(_ops.abs(x), 1.0))


def atan2(y, x, name=None):
    y, x = _operands("atan2", y, x)

    def backward(dz, z, y, x):
        scale = _ops.divide(dz, _ops.add(_ops.square(x), _ops.square(y)))
        return [_unbroadcast(_ops.multiply(scale, x), y._shape_tuple),
                _unbroadcast(_ops.negative(_ops.multiply(scale, y)), x._shape_tuple)]

    return _numpy_op(_np.arctan2, [y, x], backward)


def _zero_where_x_is_zero(name, forward, grad_x, grad_y):
    """xlogy / xdivy: 0 wherever x is 0, whatever y is (TF's definition), and so are their gradients."""

    def op(x, y, name=None):
        x, y = _operands(op.__name__, x, y)

        def backward(dz, z, x, y):
            nonzero = _ops.not_equal(x, 0)
            zero = _ops.multiply(dz, 0.0)
            gx = _ops.where(nonzero, _ops.multiply(dz, grad_x(x, y)), zero)
            gy = _ops.where(nonzero, _ops.multiply(dz, grad_y(x, y)), zero)
            return [_unbroadcast(gx, x._shape_tuple), _unbroadcast(gy, y._shape_tuple)]

        def compute(x, y):
            with _np.errstate(all="ignore"):
                return _np.where(x == 0, _np.zeros((), x.dtype), forward(x, y))

        return _numpy_op(compute, [x, y], backward)

    op.__name__ = op.__qualname__ = name
    return op


xlogy = _zero_where_x_is_zero("xlogy", lambda x, y: x * _np.log(y), lambda x, y: _ops.log(y),
                              lambda x, y: _ops.divide(x, y))
xdivy = _zero_where_x_is_zero("xdivy", lambda x, y: x / y, lambda x, y: _ops.divide(1.0, y),
                              lambda x, y: _ops.negative(_ops.divide(x, _ops.square(y))))


def _integer_operands(name, x, y):
    x, y = _operands(name, x, y, floating=False)
    if x.dtype.name == "bool":
        raise _invalid(f"tf.math.{name} does not take bool tensors: cast them to int32")
    return x, y


def floordiv(x, y, name=None):
    """Rounds toward -inf, as TF's (integers included); no gradient, as TF's."""
    return _ops.floordiv(*_integer_operands("floordiv", x, y))


def floormod(x, y, name=None):
    """The remainder of floordiv: it takes the divisor's sign."""
    return _ops.floormod(*_integer_operands("floormod", x, y))


mod = floormod


def _truncating(name, integer, floating):
    def op(x, y, name=None):
        x, y = _integer_operands(op.__name__, x, y)
        a, b = x.numpy(), y.numpy()
        if x.dtype.is_integer:
            if (b == 0).any():
                raise _invalid(f"Integer division by zero in tf.math.{op.__name__}")
            return _convert(integer(a, b).astype(a.dtype))
        with _np.errstate(all="ignore"):
            return _convert(floating(a, b).astype(a.dtype), x.dtype)

    op.__name__ = op.__qualname__ = name
    return op


_truncatediv = _truncating("truncatediv", lambda a, b: _np.sign(a) * _np.sign(b) * (_np.abs(a) // _np.abs(b)),
                          lambda a, b: _np.trunc(a / b))
_truncatemod = _truncating("truncatemod", _np.fmod, _np.fmod)


def _axis(x, axis):
    rank = len(x._shape_tuple)
    axis = int(axis)
    if not -rank <= axis < rank:
        raise _invalid(f"axis {axis} is out of range for a tensor of rank {rank}: use -{rank} <= axis < {rank}")
    return axis % rank


def _scan(np_accumulate, x, axis, exclusive, reverse, identity):
    x = _np.asarray(x)
    if reverse:
        x = _np.flip(x, axis)
    out = np_accumulate(x, axis=axis)
    if exclusive:
        first = _np.full_like(_np.take(out, [0], axis=axis), identity)
        out = _np.concatenate([first, _np.take(out, _np.arange(out.shape[axis] - 1), axis=axis)], axis=axis)
    return _np.flip(out, axis) if reverse else out


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    x = _convert(x)
    axis = _axis(x, axis)
    return _numpy_op(lambda a: _scan(_np.cumsum, a, axis, exclusive, reverse, 0).astype(a.dtype), [x],
                     lambda dy, y, x: [cumsum(dy, axis, exclusive, not reverse)])


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """The gradient divides by x, as TF's does: it is not finite where x has zeros."""
    x = _convert(x)
    axis = _axis(x, axis)
    return _numpy_op(lambda a: _scan(_np.cumprod, a, axis, exclusive, reverse, 1).astype(a.dtype), [x],
                     lambda dy, y, x: [_ops.divide(cumsum(_ops.multiply(dy, y), axis, exclusive, not reverse), x)])


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    x = _floating("cumulative_logsumexp", x)
    axis = _axis(x, axis)

    def backward(dy, y, x):  # dx_j = sum over the outputs i that include x_j of dy_i * exp(x_j - y_i)
        shift = _ops.stop_gradient(_ops.reduce_max(x, [axis], True))
        weights = cumsum(_ops.multiply(dy, _ops.exp(_ops.subtract(shift, y))), axis, exclusive, not reverse)
        return [_ops.multiply(weights, _ops.exp(_ops.subtract(x, shift)))]

    with _np.errstate(all="ignore"):
        return _numpy_op(lambda a: _scan(_np.logaddexp.accumulate, a, axis, exclusive, reverse, -_np.inf)
                         .astype(a.dtype), [x], backward)


def _axes(x, axis):
    rank = len(x._shape_tuple)
    if axis is None:
        return list(_builtins.range(rank))
    return sorted({_axis(x, a) for a in (_np.ravel(_np.asarray(axis)).tolist())})


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    x = _floating("reduce_logsumexp", input_tensor)
    axes = _axes(x, axis)
    peak = _ops.stop_gradient(_ops.reduce_max(x, axes, True))
    peak = _ops.where(is_finite(peak), peak, _ops.multiply(peak, 0.0))  # an all -inf row stays -inf, not nan
    out = _ops.add(_ops.log(_ops.reduce_sum(_ops.exp(_ops.subtract(x, peak)), axes, True)), peak)
    return out if keepdims else _ops.reshape(out, [d for i, d in enumerate(x._shape_tuple) if i not in axes])


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    x = _convert(input_tensor)
    if not x.dtype.is_floating:
        return _convert(_np.sqrt((x.numpy().astype(_np.float64) ** 2).sum(axis=tuple(_axes(x, axis)),
                                                                       keepdims=bool(keepdims))).astype(
            x.dtype.as_numpy_dtype))
    return _ops.sqrt(_ops.reduce_sum(_ops.square(x), _axes(x, axis), bool(keepdims)))


def _segment_ids(segment_ids, data, sorted_ids, num_segments=None):
    ids = _np.asarray(_convert(segment_ids).numpy()).astype(_np.int64)
    shape = data._shape_tuple
    if list(ids.shape) != shape[:ids.ndim]:
        raise _invalid(f"segment_ids of shape {list(ids.shape)} must be a prefix of data's shape {shape}")
    if sorted_ids and (ids.ndim != 1 or (ids.size and ((_np.diff(ids) < 0).any() or ids[0] < 0))):
        raise _invalid("segment_ids must be a sorted 1-D list of non-negative ids: use tf.math.unsorted_segment_*")
    n = int(num_segments) if num_segments is not None else (int(ids.max()) + 1 if ids.size else 0)
    if ids.size and ids.max() >= n:
        raise _invalid(f"segment id {int(ids.max())} is out of range for num_segments={n}")
    return ids, n


def _segment_reduce(kind, data, ids, n, empty_max=None):
    """Rows of `data` (flattened over the ids' dims) reduced per segment; ids < 0 are dropped (unsorted ops). An
    empty segment's max is empty_max, else the dtype's lowest value (TF's sorted and unsorted ops differ)."""
    x = _convert(data)
    rows = _ops.reshape(x, [int(ids.size)] + x._shape_tuple[ids.ndim:])
    flat = ids.reshape(-1)
    keep = flat >= 0
    tail = x._shape_tuple[ids.ndim:]

    def forward(a):
        out = _np.zeros([n] + tail, a.dtype)
        if kind == "max":
            out[...] = _np.finfo(a.dtype).min if a.dtype.kind == "f" else _np.iinfo(a.dtype).min
            _np.maximum.at(out, flat[keep], a[keep])
            if empty_max is not None:
                out[_np.bincount(flat[keep], minlength=n) == 0] = empty_max
        else:
            _np.add.at(out, flat[keep], a[keep])
        if kind == "mean":
            counts = _np.bincount(flat[keep], minlength=n).reshape([n] + [1] * len(tail))
            out = out / _np.maximum(counts, 1)
        return out.astype(a.dtype)

    def backward(dy, y, rows):
        safe = _np.where(keep, flat, 0)
        picked = _ops.gather(dy, safe)
        mask = _convert(keep.reshape([-1] + [1] * len(tail)).astype(rows.dtype.as_numpy_dtype))
        if kind == "mean":
            counts = _np.maximum(_np.bincount(flat[keep], minlength=n), 1)[safe]
            picked = _ops.divide(picked, _convert(counts.reshape([-1] + [1] * len(tail)).astype(
                rows.dtype.as_numpy_dtype)))
        if kind == "max":  # the max's gradient is shared by the rows that attain it
            hit = _ops.cast(_ops.equal(rows, _ops.gather(y, safe)), rows.dtype)
            ties = _ops.gather(_segment_reduce("sum", hit, ids.reshape(-1), n), safe)
            picked = _ops.divide(_ops.multiply(picked, hit), _ops.maximum(ties, 1.0))
        return [_ops.multiply(picked, mask)]

    return _numpy_op(forward, [rows], backward if x.dtype.is_floating else None)


def segment_sum(data, segment_ids, name=None):
    data = _convert(data)
    return _segment_reduce("sum", data, *_segment_ids(segment_ids, data, True))


def segment_mean(data, segment_ids, name=None):
    data = _convert(data)
    return _segment_reduce("mean", data, *_segment_ids(segment_ids, data, True))


def segment_max(data, segment_ids, name=None):
    data = _convert(data)
    return _segment_reduce("max", data, *_segment_ids(segment_ids, data, True), empty_max=0)


def unsorted_segment_sum(data, segment_ids, num_segments, name=None):
    data = _convert(data)
    return _segment_reduce("sum", data, *_segment_ids(segment_ids, data, False, num_segments))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    data = _convert(data)
    return _segment_reduce("mean", data, *_segment_ids(segment_ids, data, False, num_segments))


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    data = _convert(data)
    return _segment_reduce("max", data, *_segment_ids(segment_ids, data, False, num_segments))


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=_dtypes.int32, name=None, axis=None,
             binary_output=False):
    if axis not in (None, 0):
        raise NotImplementedError(f"tf.math.bincount with axis={axis} is not implemented by lockstep "
                                  "(see docs/python.md)")
    a = _np.asarray(_convert(arr).numpy())
    if a.dtype.kind not in "iu":
        raise _invalid(f"tf.math.bincount counts integers, got {a.dtype}: cast the values to int32")
    if (a < 0).any():
        raise _invalid("tf.math.bincount's values must be non-negative")
    a = a.reshape(-1)
    size = int(a.max()) + 1 if a.size else 0
    if minlength is not None:
        size = _builtins.max(size, int(minlength))
    if maxlength is not None:
        size = _builtins.min(size, int(maxlength))
    w = None if weights is None else _np.asarray(_convert(weights).numpy()).reshape(-1)
    keep = a < size
    out = _np.bincount(a[keep], None if w is None else w[keep], minlength=size)[:size]
    if binary_output:
        out = (out > 0)
    out_dtype = _dtypes.as_dtype(dtype) if w is None else _convert(weights).dtype
    return _convert(out.astype(out_dtype.as_numpy_dtype))


def count_nonzero(input, axis=None, keepdims=None, dtype=_dtypes.int64, name=None):  # noqa: A002
    x = _convert(input)
    a = _np.asarray(x.numpy())
    out = _np.count_nonzero(a, axis=None if axis is None else tuple(_axes(x, axis)), keepdims=bool(keepdims))
    return _convert(_np.asarray(out).astype(_dtypes.as_dtype(dtype).as_numpy_dtype))


class TopKV2(tuple):
    """top_k's result: (values, indices), also by name."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


def top_k(input, k=1, sorted=True, index_type=_dtypes.int32, name=None):  # noqa: A002
    x = _convert(input)
    shape = x._shape_tuple
    k = int(k)
    if not shape:
        raise _invalid("tf.math.top_k needs a tensor of rank >= 1, got a scalar")
    if not 0 <= k <= shape[-1]:
        raise _invalid(f"tf.math.top_k's k={k} must be between 0 and the last dimension's size {shape[-1]}")
    a = x.numpy()
    order = _np.argsort(-a.astype(_np.float64) if a.dtype.kind != "b" else ~a, axis=-1, kind="stable")[..., :k]
    indices = _convert(order.astype(_dtypes.as_dtype(index_type).as_numpy_dtype))

    def backward(dy, y, x):  # each value's gradient goes back to the element it came from
        spread = _ops.one_hot(_ops.cast(indices, "int64"), shape[-1], 1.0, 0.0, x.dtype._lockstep_dtype)
        return [_ops.reduce_sum(_ops.multiply(spread, _ops.reshape(dy, dy._shape_tuple + [1])), [len(shape) - 1],
                                False)]

    values = _numpy_op(lambda a: _np.take_along_axis(a, order, axis=-1), [x],
                       backward if x.dtype.is_floating else None)
    return TopKV2(values, indices)


def polyval(coeffs, x, name=None):
    """Horner's rule: coeffs[0] * x**(n-1) + ... + coeffs[n-1], differentiable in both."""
    x = _convert(x)
    out = _ops.multiply(x, 0)
    for c in coeffs:
        out = _ops.add(_ops.multiply(out, x), _convert(c, dtype_hint=x.dtype))
    return out


def _real_only(name, x):
    if _np.iscomplexobj(x) or "complex" in str(getattr(x, "dtype", "")):
        raise NotImplementedError(f"tf.math.{name} of complex64/complex128 tensors is not implemented by lockstep: "
                                  "it has no complex dtypes (see docs/python.md)")
    return _convert(x)


def real(input, name=None):  # noqa: A002
    return _ops.identity(_real_only("real", input))


def imag(input, name=None):  # noqa: A002
    x = _real_only("imag", input)
    return _ops.multiply(x, 0)


def conj(x, name=None):
    return _ops.identity(_real_only("conj", x))


def angle(input, name=None):  # noqa: A002
    x = _real_only("angle", input)
    return _convert(_np.where(x.numpy() < 0, _np.pi, 0.0).astype(x.dtype.as_numpy_dtype))
