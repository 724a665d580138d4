"""tf.math: elementwise and reducing ops over lockstep's kernels (gradients recorded by GradientTape)."""
import builtins as _builtins

import numpy as _np

from . import _lockstep, dtypes as _dtypes

_ops = _lockstep.ops
convert = _ops.convert_to_tensor

add, subtract, multiply, divide = _ops.add, _ops.subtract, _ops.multiply, _ops.divide
truediv = divide
floordiv = _ops.floordiv
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
    y = convert(y)
    safe = _ops.where(_ops.equal(y, 0), _ops.add(_ops.multiply(y, 0), 1), y)
    return _ops.where(_ops.equal(y, 0), _ops.multiply(safe, 0), _ops.divide(x, safe))


def squared_difference(x, y, name=None):
    return _ops.square(_ops.subtract(x, y))


def reciprocal(x, name=None):
    return _ops.divide(1.0, x)


def softplus(features, name=None):
    x = convert(features)
    return _ops.add(_ops.relu(x), _ops.log(_ops.add(_ops.exp(_ops.negative(_ops.abs(x))), 1.0)))


def log_sigmoid(x, name=None):
    return _ops.negative(softplus(_ops.negative(x)))


def is_nan(x, name=None):
    return _ops.not_equal(x, x)


def is_finite(x, name=None):
    x = convert(x)
    return _ops.logical_and(_ops.equal(x, x), _ops.less(_ops.abs(x), float("inf")))


def is_inf(x, name=None):
    return _ops.equal(_ops.abs(x), float("inf"))


def round(x, name=None):  # noqa: A001  (banker's rounding, as TF's; no gradient)
    x = convert(x)
    return _ops.convert_to_tensor(_np.round(x.numpy()).astype(x.dtype.as_numpy_dtype))


def floor(x, name=None):
    x = convert(x)
    return _ops.convert_to_tensor(_np.floor(x.numpy()).astype(x.dtype.as_numpy_dtype))


def ceil(x, name=None):
    x = convert(x)
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
    x = convert(input_tensor)
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
