"""The Python face of lockstep's Tensor and Variable (both C++ objects): shape, dtype, printing, indexing, NumPy
and DLPack interchange. Arithmetic, comparisons and numpy() are the C++ binding's own (python/src/tensor.cc)."""
import numpy as _np

from . import _lockstep, dtypes

Tensor = _lockstep.Tensor
_ops = _lockstep.ops


class TensorShape:
    """A shape, as tf.TensorShape: its dims are ints, or None where unknown."""

    def __init__(self, dims):
        if isinstance(dims, TensorShape):
            dims = dims._dims
        elif dims is not None and (getattr(dims, "ndim", None) == 0 or not hasattr(dims, "__iter__")):
            dims = (dims,)  # one number is a shape of one dimension, as TensorFlow takes tf.zeros(2)
        self._dims = None if dims is None else tuple(None if d is None or d == -1 else int(d) for d in dims)

    @property
    def rank(self):
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self):
        return None if self._dims is None else list(self._dims)

    def as_list(self):
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def num_elements(self):
        if self._dims is None or None in self._dims:
            return None
        return int(_np.prod(self._dims, dtype=_np.int64))

    def is_fully_defined(self):
        return self._dims is not None and None not in self._dims

    def is_compatible_with(self, other):
        """Whether the two shapes could be of one tensor: an unknown rank or dimension is compatible with any."""
        other = TensorShape(other)
        if self._dims is None or other._dims is None:
            return True
        return len(self._dims) == len(other._dims) and all(
            a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def __len__(self):
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        return iter(self._dims)

    def __getitem__(self, key):
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __eq__(self, other):
        try:
            other = TensorShape(other)
        except TypeError:
            return NotImplemented
        return self._dims == other._dims

    def __hash__(self):
        return hash(self._dims)

    def __add__(self, other):
        return TensorShape(self._dims + tuple(TensorShape(other)))

    def __radd__(self, other):
        return TensorShape(tuple(TensorShape(other)) + self._dims)

    def concatenate(self, other):
        return self + other

    def __repr__(self):
        return "TensorShape(None)" if self._dims is None else f"TensorShape({list(self._dims)})"

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        return "(" + ", ".join("None" if d is None else str(d) for d in self._dims) + ("," if len(self._dims) == 1 else "") + ")"


def _repr(t):
    return f"<tf.Tensor: shape={t.shape}, dtype={t.dtype.name}, numpy={_np.array2string(t.numpy(), separator=' ')}>"


def _array(t, dtype=None, copy=None):
    a = t.numpy()
    if dtype is not None:
        a = a.astype(dtype, copy=False)
    return a.copy() if copy else a


def _index(t, key):
    """Basic indexing: ints, slices (any step), Ellipsis and None (tf.newaxis), as Tensor.__getitem__ in TF."""
    if not isinstance(key, tuple):
        key = (key,)
    shape = list(t._shape_tuple)
    if any(isinstance(k, (Tensor, _lockstep.Variable, list, _np.ndarray)) for k in key):
        raise TypeError("lockstep indexes tensors with ints, slices, ... and None only; use tf.gather for index lists")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        explicit = sum(1 for k in key if k is not None and k is not Ellipsis)
        key = key[:at] + (slice(None),) * (len(shape) - explicit) + key[at + 1:]
    begin, size, out_shape, steps, axis = [], [], [], [], 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        if axis >= len(shape):
            raise IndexError(f"too many indices for a tensor of rank {len(shape)}")
        n = shape[axis]
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            if step < 0:
                raise ValueError("lockstep does not index with negative steps; use tf.reverse on the NumPy side")
            count = max(0, (stop - start + step - 1) // step)
            begin.append(start)
            size.append(0 if count == 0 else (count - 1) * step + 1)
            steps.append((axis, step, count))
            out_shape.append(count)
        else:
            i = int(k)
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            begin.append(i % n)
            size.append(1)
        axis += 1
    begin += [0] * (len(shape) - axis)
    size += shape[axis:]
    out_shape += shape[axis:]
    x = _ops.slice(t, begin, size)
    for ax, step, count in steps:
        if step > 1 and count > 0:
            perm = [ax] + [i for i in range(len(shape)) if i != ax]
            inverse = list(_np.argsort(perm))
            x = _ops.transpose(_ops.gather(_ops.transpose(x, perm), _np.arange(0, size_of(x, ax), step)), inverse)
    return _ops.reshape(x, out_shape)


def size_of(t, axis):
    return t._shape_tuple[axis]


def _dlpack(t, stream=None, **kwargs):
    return t.numpy().__dlpack__()


def _install(cls):
    cls.shape = property(lambda t: TensorShape(t._shape_tuple))
    cls.dtype = property(lambda t: dtypes._BY_ENUM[t._dtype])
    cls.device = property(lambda t: "/job:localhost/replica:0/task:0/device:CPU:0")
    cls.__array__ = _array
    cls.__array_priority__ = 100  # NumPy defers `array * tensor` to the tensor's operator
    cls.__getitem__ = _index
    cls.__dlpack__ = _dlpack
    cls.__dlpack_device__ = lambda t: (1, 0)
    cls.get_shape = lambda t: t.shape
    cls.set_shape = _set_shape
    cls.__iter__ = _iter
    cls.ref = lambda t: _Ref(t)
    cls.experimental_ref = cls.ref


def _set_shape(t, shape):
    if not TensorShape(shape).is_fully_defined() and len(TensorShape(shape)) == len(t.shape):
        return
    if TensorShape(shape) != t.shape:
        raise ValueError(f"Tensor's shape {t.shape} is not compatible with supplied shape {TensorShape(shape)}")


def _iter(t):
    n = t._shape_tuple
    if not n:
        raise TypeError("Cannot iterate over a scalar tensor.")
    return (t[i] for i in range(n[0]))


class _Ref:
    """A hashable reference to a tensor or variable (tensor.ref()): equal when they are the same object."""

    def __init__(self, obj):
        self._obj = obj

    def deref(self):
        return self._obj

    def __hash__(self):
        return id(self._obj)

    def __eq__(self, other):
        return isinstance(other, _Ref) and other._obj is self._obj


_install(Tensor)
Tensor.__repr__ = _repr
Tensor.__str__ = lambda t: str(t.numpy())
Tensor.__format__ = lambda t, spec: format(t.numpy(), spec) if t._shape_tuple == [] else str(t)
