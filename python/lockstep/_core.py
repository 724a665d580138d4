"""The top-level tf.* functions on tensors."""
import numpy as _np

from . import _lockstep, dtypes as _dtypes, math as _math
from ._tensor import Tensor, TensorShape
from ._variable import Variable

_ops = _lockstep.ops

__all__ = ["constant", "convert_to_tensor", "cast", "reshape", "transpose", "concat", "stack", "unstack",
           "one_hot", "matmul", "where", "zeros", "ones", "zeros_like", "ones_like", "fill", "range", "linspace",
           "shape", "size", "rank", "expand_dims", "squeeze", "identity", "stop_gradient", "add_n", "clip_by_value", "broadcast_to",
           "tile", "is_tensor", "newaxis", "print", "reduce_sum", "reduce_mean", "reduce_max", "reduce_min",
           "reduce_any", "reduce_all", "reduce_prod", "argmax", "argmin", "add", "subtract", "multiply", "divide", "maximum",
           "minimum", "exp", "square", "sqrt", "abs", "sign", "pow", "equal", "not_equal", "less", "less_equal",
           "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "sigmoid", "tanh", "split",
           "slice", "no_op", "executing_eagerly", "device", "name_scope", "init_scope", "get_static_value",
           "control_dependencies", "ensure_shape", "clip_by_norm", "clip_by_global_norm", "realdiv",
           "truediv", "floordiv", "negative", "log", "reverse", "sort", "argsort"]

newaxis = None
(reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_any, reduce_all, argmax, argmin, add, subtract, multiply,
 divide, maximum, minimum, exp, square, sqrt, abs, sign, pow, equal, not_equal, less, less_equal, greater,
 greater_equal, logical_and, logical_or, logical_not, sigmoid, tanh, negative, log, truediv, floordiv) = (
    _math.reduce_sum, _math.reduce_mean, _math.reduce_max, _math.reduce_min, _math.reduce_any, _math.reduce_all,
    _math.argmax, _math.argmin, _math.add, _math.subtract, _math.multiply, _math.divide, _math.maximum,
    _math.minimum, _math.exp, _math.square, _math.sqrt, _math.abs, _math.sign, _math.pow, _math.equal,
    _math.not_equal, _math.less, _math.less_equal, _math.greater, _math.greater_equal, _math.logical_and,
    _math.logical_or, _math.logical_not, _math.sigmoid, _math.tanh, _math.negative, _math.log, _math.truediv,
    _math.floordiv)
realdiv = divide
reduce_prod = _math.reduce_prod


def _dtype_or_none(dtype):
    return None if dtype is None else _dtypes.as_dtype(dtype)._lockstep_dtype


def _strings(value, dtype):
    """A tf.string tensor (StringTensor) when `value` holds strings, else None; dtype tf.string insists on them."""
    from .data import _structure

    if isinstance(value, _structure.StringTensor):
        return value
    strings = _structure.is_string(value) or (isinstance(value, (list, tuple)) and _looks_like_strings(value))
    if not strings and dtype is not None and _dtypes.as_dtype(dtype) is _dtypes.string:
        raise TypeError(f"cannot make a tf.string tensor of {type(value).__name__} {value!r}: give strings")
    return _structure.StringTensor(_structure._bytes_array(value)) if strings else None


def _looks_like_strings(value):
    first = value
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    return isinstance(first, (str, bytes))


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None):
    strings = None if isinstance(value, (Tensor, Variable)) else _strings(value, dtype)  # tensors skip the check
    if strings is not None:
        return strings
    return _ops.convert_to_tensor(value, _dtype_or_none(dtype), _dtype_or_none(dtype_hint))


def constant(value, dtype=None, shape=None, name=None):
    strings = _strings(value, dtype)
    if strings is not None:
        if shape is not None:
            values = strings._values
            strings = type(strings)(_np.broadcast_to(values, tuple(TensorShape(shape))).copy() if values.ndim == 0
                                    else values.reshape(tuple(TensorShape(shape))))
        return strings
    if dtype is not None and not isinstance(value, (Tensor, Variable)):
        value = _np.asarray(value, dtype=_dtypes.as_dtype(dtype).as_numpy_dtype or _np.float32)
    t = _ops.convert_to_tensor(value, _dtype_or_none(dtype), None)
    if shape is not None:
        shape = list(TensorShape(shape))
        t = _ops.reshape(t, shape) if t._shape_tuple != [] else _ops.fill(shape, t, t.dtype._lockstep_dtype)
    return t


def cast(x, dtype, name=None):
    return _ops.cast(x, _dtypes.as_dtype(dtype)._lockstep_dtype)


def reshape(tensor, shape, name=None):
    return _ops.reshape(tensor, shape)


def transpose(a, perm=None, conjugate=False, name=None):
    return _ops.transpose(a, perm)


def concat(values, axis, name=None):
    return _ops.concat(list(values), int(axis))


def linspace(start, stop, num, name=None, axis=0):
    """tf.linspace: integer start and stop give float64, as TensorFlow divides them."""
    start = convert_to_tensor(start)
    stop = convert_to_tensor(stop, dtype=start.dtype)
    if not start.dtype.is_floating:
        start, stop = cast(start, _dtypes.float64), cast(stop, _dtypes.float64)
    return _ops.linspace(start, stop, int(num), int(axis))


def stack(values, axis=0, name=None):
    return _ops.stack(list(values), int(axis))


def unstack(value, num=None, axis=0, name=None):
    value = convert_to_tensor(value)
    n = value._shape_tuple[axis]
    return [squeeze(_slice_axis(value, axis, i, 1), axis) for i in range(n)]


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    value = convert_to_tensor(value)
    n = value._shape_tuple[axis]
    sizes = [n // num_or_size_splits] * num_or_size_splits if isinstance(num_or_size_splits, int) else list(
        num_or_size_splits)
    out, at = [], 0
    for s in sizes:
        out.append(_slice_axis(value, axis, at, s))
        at += s
    return out


def _slice_axis(t, axis, start, size):
    shape = t._shape_tuple
    axis %= len(shape)
    begin = [0] * len(shape)
    sizes = list(shape)
    begin[axis], sizes[axis] = start, size
    return _ops.slice(t, begin, sizes)


def slice(input_, begin, size, name=None):  # noqa: A001
    return _ops.slice(input_, begin, size)


builtin_range = __builtins__["range"] if isinstance(__builtins__, dict) else __builtins__.range
builtin_print = __builtins__["print"] if isinstance(__builtins__, dict) else __builtins__.print


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    if axis not in (None, -1):
        raise NotImplementedError("tf.one_hot with axis other than -1 is not implemented by lockstep (see docs/python.md)")
    dt = _dtypes.as_dtype(dtype or _dtypes.float32)._lockstep_dtype
    return _ops.one_hot(indices, int(depth), 1.0 if on_value is None else float(on_value),
                        0.0 if off_value is None else float(off_value), dt)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, name=None, **kwargs):
    return _ops.matmul(a, b, transpose_a or adjoint_a, transpose_b or adjoint_b)


def where(condition, x=None, y=None, name=None):
    if x is None and y is None:
        return constant(_np.argwhere(_np.asarray(condition)).astype(_np.int64))
    return _ops.where(condition, x, y)


def zeros(shape, dtype=_dtypes.float32, name=None, layout=None):
    return _ops.fill(list(TensorShape(shape)), 0, _dtypes.as_dtype(dtype)._lockstep_dtype)


def ones(shape, dtype=_dtypes.float32, name=None, layout=None):
    return _ops.fill(list(TensorShape(shape)), 1, _dtypes.as_dtype(dtype)._lockstep_dtype)


def zeros_like(input, dtype=None, name=None, layout=None):  # noqa: A002
    t = convert_to_tensor(input)
    return zeros(t.shape, dtype or t.dtype)


def ones_like(input, dtype=None, name=None, layout=None):  # noqa: A002
    t = convert_to_tensor(input)
    return ones(t.shape, dtype or t.dtype)


def fill(dims, value, name=None, layout=None):
    return _ops.fill(list(TensorShape(dims)), value, None)


def _range_dtype(value):
    """The dtype TF's range gives an argument: a tensor's or NumPy value's own, else float32 or int32."""
    if hasattr(value, "dtype"):
        return _dtypes.as_dtype(value.dtype)
    return _dtypes.float32 if isinstance(value, float) else _dtypes.int32


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001
    if limit is None:
        start, limit = 0, start
    if dtype is None:  # as TF: the widest of the arguments' dtypes in this order
        order = [getattr(_dtypes, n) for n in ("int32", "int64", "float16", "bfloat16", "float32", "float64")
                 if hasattr(_dtypes, n)]
        found = [_range_dtype(v) for v in (start, limit, delta)]
        for d in found:
            if d not in order:
                raise TypeError(f"range: arguments of dtype {d.name} are not supported; use one of "
                                f"{', '.join(o.name for o in order)}")
        dtype = max(found, key=order.index)
    return _ops.range(float(start), float(limit), float(delta), _dtypes.as_dtype(dtype)._lockstep_dtype)


def shape(input, out_type=_dtypes.int32, name=None):  # noqa: A002
    return _ops.convert_to_tensor(_np.asarray(convert_to_tensor(input)._shape_tuple,
                                              _dtypes.as_dtype(out_type).as_numpy_dtype), None, None)


def size(input, out_type=_dtypes.int32, name=None):  # noqa: A002
    return constant(int(_np.prod(convert_to_tensor(input)._shape_tuple)), dtype=out_type)


def rank(input, name=None):  # noqa: A002
    return constant(len(convert_to_tensor(input)._shape_tuple), dtype=_dtypes.int32)


def expand_dims(input, axis, name=None):  # noqa: A002
    t = convert_to_tensor(input)
    s = list(t._shape_tuple)
    axis = int(axis)
    s.insert(axis if axis >= 0 else len(s) + axis + 1, 1)
    return _ops.reshape(t, s)


def squeeze(input, axis=None, name=None):  # noqa: A002
    t = convert_to_tensor(input)
    s = t._shape_tuple
    if axis is None:
        return _ops.reshape(t, [d for d in s if d != 1])
    axes = {a % len(s) for a in ([axis] if isinstance(axis, int) else axis)}
    for a in axes:
        if s[a] != 1:
            raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got {s[a]}")
    return _ops.reshape(t, [d for i, d in enumerate(s) if i not in axes])


def identity(input, name=None):  # noqa: A002
    return _ops.identity(input)


def stop_gradient(input, name=None):  # noqa: A002
    return _ops.stop_gradient(input)


def add_n(inputs, name=None):
    return _ops.add_n(list(inputs))


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    return _ops.minimum(_ops.maximum(t, clip_value_min), clip_value_max)


def clip_by_norm(t, clip_norm, axes=None, name=None):
    t = convert_to_tensor(t)
    n = _ops.sqrt(_ops.reduce_sum(_ops.square(t), axes, True))
    return _ops.divide(_ops.multiply(t, clip_norm), _ops.maximum(n, clip_norm))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    present = [t for t in t_list if t is not None]
    if use_norm is None:
        use_norm = _ops.sqrt(_ops.add_n([_ops.reduce_sum(_ops.square(t)) for t in present]))
    scale = _ops.divide(clip_norm, _ops.maximum(use_norm, clip_norm))
    return [None if t is None else _ops.multiply(t, scale) for t in t_list], use_norm


def broadcast_to(input, shape, name=None):  # noqa: A002
    return _ops.broadcast_to(input, list(TensorShape(shape)))


def tile(input, multiples, name=None):  # noqa: A002
    t = convert_to_tensor(input)
    for axis, m in enumerate(list(multiples)):
        if int(m) != 1:
            t = _ops.concat([t] * int(m), axis)
    return t


def reverse(tensor, axis, name=None):
    t = convert_to_tensor(tensor)
    for a in axis:
        idx = _np.arange(t._shape_tuple[a] - 1, -1, -1)
        perm = list(builtin_range(len(t._shape_tuple)))
        perm[0], perm[a] = perm[a], perm[0]
        t = _ops.transpose(_ops.gather(_ops.transpose(t, perm), idx), perm)
    return t


def sort(values, axis=-1, direction="ASCENDING", name=None):
    a = _np.sort(_np.asarray(values), axis=axis)
    return constant(_np.flip(a, axis) if direction == "DESCENDING" else a)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    v = _np.asarray(values)
    a = _np.argsort(-v if direction == "DESCENDING" else v, axis=axis, kind="stable")
    return constant(a.astype(_np.int32))


def ensure_shape(x, shape, name=None):
    x = convert_to_tensor(x)
    want = TensorShape(shape)
    if len(want) != len(x.shape) or any(w is not None and w != d for w, d in zip(want, x.shape)):
        raise ValueError(f"Shape of tensor {x.shape} is not compatible with expected shape {want}.")
    return x


def is_tensor(x):
    return isinstance(x, (Tensor, Variable))


def get_static_value(tensor, partial=False):
    return _np.asarray(tensor) if is_tensor(tensor) else tensor


def print(*inputs, output_stream=None, summarize=None, sep=" ", end="\n", name=None):  # noqa: A001
    import sys

    text = sep.join(str(x.numpy()) if is_tensor(x) else str(x) for x in inputs)
    stream = sys.stderr if output_stream is None or output_stream == "stderr" else sys.stdout
    builtin_print(text, end=end, file=stream)


def no_op(name=None):
    return None


def executing_eagerly():
    return True


class _NullContext:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class device:
    """tf.device: variables made inside live on that device ("/gpu:0", "/device:GPU:0", a full
    "/job:.../device:GPU:0" name, or None for no change); ops run where their inputs are (docs/gpu.md)."""

    def __init__(self, device_name):
        name = device_name.name if hasattr(device_name, "name") else device_name
        self._name = None if not name else "/" + str(name).rstrip("/").split("/")[-1]
        self._scope = None

    def __enter__(self):
        if self._name is not None:
            self._scope = _lockstep.config._DeviceScope(self._name)
        return self

    def __exit__(self, *exc):
        self._scope = None  # the scope ends here, on the thread that opened it
        return False


from ._module import name_scope  # noqa: E402 (tf.name_scope, beside tf.Module)
init_scope = _NullContext
control_dependencies = _NullContext
