"""tf.SparseTensor and the tf.sparse ops over it: indices and shapes are worked out in NumPy, values move with
lockstep's gather so that GradientTape differentiates to_dense, add, slice, reduce_sum and the rest w.r.t. values."""
import numpy as _np

from . import _lockstep, dtypes as _dtypes
from ._tensor import Tensor, TensorShape
from .errors import InvalidArgumentError

_ops = _lockstep.ops

__all__ = ["SparseTensor", "SparseTensorSpec"]


def _string_tensor():
    from .data import _structure

    return _structure.StringTensor


def is_strings(values):
    return isinstance(values, _string_tensor())


def values_of(value, dtype=None, what="values"):
    """A Tensor, or a StringTensor for strings, as tf.convert_to_tensor makes it."""
    from . import _core

    if isinstance(value, (Tensor, _string_tensor())) and dtype is None:
        return value
    return _core.convert_to_tensor(value, dtype=dtype)


def take(values, positions):
    """values[positions] along the first axis; a gather (so differentiable) for numeric values."""
    positions = _np.asarray(positions, dtype=_np.int64)
    if is_strings(values):
        return _string_tensor()(values._values[positions])
    return _ops.gather(values, positions)


def take_or_fill(values, positions, fill):
    """values[positions], with `fill` (a scalar) where a position is -1: one gather over values and the fill."""
    positions = _np.asarray(positions, dtype=_np.int64)
    n = values.shape[0]
    if is_strings(values):
        table = _np.append(values._values, _np.array(fill, dtype=object))
        return _string_tensor()(table[_np.where(positions < 0, n, positions)])
    fill = values_of(fill, values.dtype)
    table = _ops.concat([values, _ops.reshape(fill, [1])], 0)
    return _ops.gather(table, _np.where(positions < 0, n, positions))


def concat_values(parts):
    if parts and is_strings(parts[0]):
        return _string_tensor()(_np.concatenate([p._values for p in parts]))
    return _ops.concat(list(parts), 0)


def tensor_text(t):
    """A tensor as str() prints it in TensorFlow: tf.Tensor(<numpy>, shape=..., dtype=...)."""
    text = str(t.numpy())
    return f"tf.Tensor({chr(10) if chr(10) in text else ''}{text}, shape={t.shape}, dtype={t.dtype.name})"


def _int64(value, what):
    a = _np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if a.dtype.kind not in "iu" and not (a.size == 0 and a.dtype.kind == "f"):
        raise TypeError(f"SparseTensor {what} must be integers (tf.int64), got {a.dtype}")
    return a.astype(_np.int64)


class SparseTensor:
    """A sparse tensor as tf.SparseTensor: `values[i]` at `indices[i]` of a dense tensor of shape `dense_shape`,
    every other element zero. indices is int64 [N, rank], values [N], dense_shape int64 [rank]."""

    def __init__(self, indices, values, dense_shape):
        idx = _int64(indices, "indices")
        shape = _int64(dense_shape, "dense_shape")
        values = values_of(values)
        if idx.ndim != 2:
            raise ValueError(f"SparseTensor indices must be a matrix [N, rank], got shape {list(idx.shape)}")
        if shape.ndim != 1 or shape.shape[0] != idx.shape[1]:
            raise ValueError(f"SparseTensor dense_shape {shape.tolist()} must be a vector of one size per index "
                             f"column ({idx.shape[1]})")
        if len(values.shape) != 1 or values.shape[0] != idx.shape[0]:
            raise ValueError(f"SparseTensor values must be a vector of one value per index row ({idx.shape[0]}), "
                             f"got shape {list(values.shape)}")
        self._idx, self._shape = idx, shape
        self._indices, self._values = _ops.convert_to_tensor(idx, None, None), values
        self._dense_shape = _ops.convert_to_tensor(shape, None, None)

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    shape = property(lambda self: TensorShape(self._shape.tolist()))

    def get_shape(self):
        return self.shape

    def set_shape(self, shape):
        want = TensorShape(shape)
        if want.rank is not None and (want.rank != len(self.shape) or any(
                a is not None and a != b for a, b in zip(want, self.shape))):
            raise ValueError(f"SparseTensor's shape {self.shape} is not compatible with {TensorShape(shape)}")

    def with_values(self, new_values):
        """The same indices and shape with other values (one per index)."""
        return SparseTensor(self._idx, new_values, self._shape)

    @classmethod
    def from_value(cls, sparse_tensor_value):
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        v = sparse_tensor_value
        return cls(v.indices, v.values, v.dense_shape)

    def _dense_operand(self, other, op, name):
        """Elementwise op with a dense operand at this tensor's indices, as TF's sparse-dense cwise ops."""
        other = values_of(other, self.dtype)
        dense = _ops.broadcast_to(other, self._shape.tolist())
        flat = _np.ravel_multi_index(self._idx.T, self._shape) if self._idx.size else _np.zeros(0, _np.int64)
        return self.with_values(op(self._values, take(_ops.reshape(dense, [-1]), flat)))

    def __mul__(self, other):
        return self._dense_operand(other, _ops.multiply, "mul")

    def __truediv__(self, other):
        return self._dense_operand(other, _ops.divide, "truediv")

    __div__ = __truediv__

    def __repr__(self):
        return (f"SparseTensor(indices={tensor_text(self._indices)}, values={tensor_text(self._values)}, "
                f"dense_shape={tensor_text(self._dense_shape)})")

    __str__ = __repr__


class SparseTensorSpec:
    """The type of a SparseTensor, as tf.SparseTensorSpec: its dense shape (None where unknown) and dtype."""

    def __init__(self, shape=None, dtype=_dtypes.float32):
        self._shape, self._dtype = TensorShape(shape), _dtypes.as_dtype(dtype)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    value_type = property(lambda self: SparseTensor)

    @classmethod
    def from_value(cls, value):
        return cls(value.shape, value.dtype)

    def is_compatible_with(self, spec_or_value):
        other = spec_or_value if isinstance(spec_or_value, SparseTensorSpec) else (
            SparseTensorSpec.from_value(spec_or_value) if isinstance(spec_or_value, SparseTensor) else None)
        if other is None or other.dtype != self.dtype:
            return False
        return self.shape.is_compatible_with(other.shape)

    def __eq__(self, other):
        return isinstance(other, SparseTensorSpec) and (self._shape, self._dtype) == (other._shape, other._dtype)

    def __hash__(self):
        return hash((self._shape, self._dtype))

    def __repr__(self):
        return f"SparseTensorSpec({self._shape!r}, {self._dtype!r})"


def check_sparse(sp_input, what):
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"{what} expects a tf.SparseTensor, got {type(sp_input).__name__}; make one with "
                        "tf.sparse.from_dense or tf.SparseTensor(indices, values, dense_shape)")
    return sp_input


def check_indices(sp, what, ordered=True):
    """InvalidArgumentError, as TF's kernels, for an index out of bounds, out of row-major order or repeated."""
    idx, shape = sp._idx, sp._shape
    for i, row in enumerate(idx):
        if _np.any(row < 0) or _np.any(row >= shape):
            raise InvalidArgumentError(f"{what}: indices[{i}] = {row.tolist()} is out of bounds: need 0 <= index < "
                                       f"{shape.tolist()}")
    if ordered and len(idx) > 1:
        keys = _np.ravel_multi_index(idx.T, shape)
        step = _np.diff(keys)
        if _np.any(step <= 0):
            i = int(_np.argmax(step <= 0)) + 1
            kind = "repeated" if step[i - 1] == 0 else "out of order"
            raise InvalidArgumentError(f"{what}: indices[{i}] = {idx[i].tolist()} is {kind}; many sparse ops need "
                                       "sorted, unique indices: use tf.sparse.reorder to make an ordered copy")


def row_major_order(idx, shape):
    """The permutation that sorts index rows in row-major order (stable, so repeats keep their order)."""
    if len(idx) == 0:
        return _np.zeros(0, _np.int64)
    return _np.lexsort(idx.T[::-1]).astype(_np.int64)


def to_dense(sp_input, default_value=None, validate_indices=True, name=None):
    check_sparse(sp_input, "tf.sparse.to_dense")
    sp = sp_input
    check_indices(sp, "tf.sparse.to_dense", ordered=validate_indices)
    if default_value is None:
        default_value = b"" if is_strings(sp._values) else 0
    where = _np.full(int(_np.prod(sp._shape)), -1, _np.int64)
    if len(sp._idx):
        where[_np.ravel_multi_index(sp._idx.T, sp._shape)] = _np.arange(len(sp._idx))
    flat = take_or_fill(sp._values, where, default_value)
    if is_strings(flat):
        return _string_tensor()(flat._values.reshape(sp._shape))
    return _ops.reshape(flat, sp._shape.tolist())


def from_dense(tensor, name=None):
    t = values_of(tensor)
    a = t.numpy()
    nonzero = a != (b"" if is_strings(t) else 0)
    idx = _np.argwhere(nonzero).astype(_np.int64).reshape(-1, a.ndim)
    flat = _np.flatnonzero(nonzero)
    values = _string_tensor()(a[nonzero]) if is_strings(t) else take(_ops.reshape(t, [-1]), flat)
    return SparseTensor(idx, values, _np.array(a.shape, _np.int64))


def _reordered(sp, order, idx=None, shape=None):
    idx = sp._idx if idx is None else idx
    return SparseTensor(idx[order], take(sp._values, order), sp._shape if shape is None else shape)


def reorder(sp_input, name=None):
    sp = check_sparse(sp_input, "tf.sparse.reorder")
    return _reordered(sp, row_major_order(sp._idx, sp._shape))


def transpose(sp_input, perm=None, name=None):
    sp = check_sparse(sp_input, "tf.sparse.transpose")
    rank = len(sp._shape)
    perm = list(range(rank))[::-1] if perm is None else [int(p) for p in _np.asarray(perm).reshape(-1)]
    if sorted(perm) != list(range(rank)):
        raise InvalidArgumentError(f"tf.sparse.transpose: perm {perm} is not a permutation of 0..{rank - 1}")
    idx, shape = sp._idx[:, perm], sp._shape[perm]
    return _reordered(sp, row_major_order(idx, shape), idx, shape)


def expand_dims(sp_input, axis=None, name=None):
    sp = check_sparse(sp_input, "tf.sparse.expand_dims")
    rank = len(sp._shape)
    axis = -1 if axis is None else int(axis)
    if not -rank - 1 <= axis <= rank:
        raise InvalidArgumentError(f"tf.sparse.expand_dims: axis {axis} is out of range for a rank-{rank} tensor; "
                                   f"use -{rank + 1} <= axis <= {rank}")
    axis %= rank + 1
    idx = _np.insert(sp._idx, axis, 0, axis=1)
    return SparseTensor(idx, sp._values, _np.insert(sp._shape, axis, 1))


def reshape(sp_input, shape, name=None):
    sp = check_sparse(sp_input, "tf.sparse.reshape")
    new = _np.asarray(shape.numpy() if hasattr(shape, "numpy") else shape, dtype=_np.int64).reshape(-1).copy()
    total = int(_np.prod(sp._shape))
    if (new == -1).sum() > 1:
        raise InvalidArgumentError(f"tf.sparse.reshape: shape {new.tolist()} has more than one -1")
    if (new == -1).any():
        known = int(_np.prod(new[new != -1]))
        if known == 0 or total % known:
            raise InvalidArgumentError(f"tf.sparse.reshape: cannot reshape {total} elements into {new.tolist()}")
        new[new == -1] = total // known
    if int(_np.prod(new)) != total:
        raise InvalidArgumentError(f"tf.sparse.reshape: a tensor of {total} elements ({sp._shape.tolist()}) cannot "
                                   f"take shape {new.tolist()}; the sizes must multiply to {total}")
    flat = _np.ravel_multi_index(sp._idx.T, sp._shape) if len(sp._idx) else _np.zeros(0, _np.int64)
    idx = _np.stack(_np.unravel_index(flat, new), axis=1).astype(_np.int64).reshape(-1, len(new))
    return SparseTensor(idx, sp._values, new)


def retain(sp_input, to_retain):
    sp = check_sparse(sp_input, "tf.sparse.retain")
    keep = _np.asarray(to_retain.numpy() if hasattr(to_retain, "numpy") else to_retain)
    if keep.dtype != bool or keep.shape != (len(sp._idx),):
        raise ValueError(f"tf.sparse.retain: to_retain must be a bool vector of one entry per value "
                         f"({len(sp._idx)}), got {keep.dtype} of shape {list(keep.shape)}")
    kept = _np.flatnonzero(keep)
    return SparseTensor(sp._idx[kept], take(sp._values, kept), sp._shape)


def slice(sp_input, start, size, name=None):  # noqa: A001
    sp = check_sparse(sp_input, "tf.sparse.slice")
    start = _np.asarray(start, _np.int64).reshape(-1)
    size = _np.asarray(size, _np.int64).reshape(-1)
    if len(start) != len(sp._shape) or len(size) != len(sp._shape):
        raise InvalidArgumentError(f"tf.sparse.slice: start and size need one entry per dimension "
                                   f"({len(sp._shape)}), got {start.tolist()} and {size.tolist()}")
    end = _np.minimum(start + size, sp._shape)
    inside = _np.all((sp._idx >= start) & (sp._idx < end), axis=1) if len(sp._idx) else _np.zeros(0, bool)
    kept = _np.flatnonzero(inside)
    shape = _np.maximum(end - _np.minimum(start, sp._shape), 0)
    return SparseTensor(sp._idx[kept] - start, take(sp._values, kept), shape)


def concat(axis, sp_inputs, name=None, expand_nonconcat_dims=False, concat_dim=None):
    axis = concat_dim if concat_dim is not None else axis
    inputs = [check_sparse(s, "tf.sparse.concat") for s in sp_inputs]
    if not inputs:
        raise ValueError("tf.sparse.concat needs at least one SparseTensor")
    rank = len(inputs[0]._shape)
    if any(len(s._shape) != rank for s in inputs):
        raise InvalidArgumentError(f"tf.sparse.concat: inputs have ranks {[len(s._shape) for s in inputs]}; they "
                                   "must all have the same rank")
    axis = int(axis) % rank
    shapes = _np.stack([s._shape for s in inputs])
    others = [d for d in range(rank) if d != axis]
    if expand_nonconcat_dims:
        shapes[:, others] = shapes[:, others].max(axis=0)
    elif _np.any(shapes[:, others] != shapes[0, others]):
        raise InvalidArgumentError(f"tf.sparse.concat: shapes {shapes.tolist()} differ outside axis {axis}; they "
                                   "must match there (or pass expand_nonconcat_dims=True)")
    offsets = _np.concatenate([[0], _np.cumsum(shapes[:, axis])[:-1]])
    parts = []
    for s, off in zip(inputs, offsets):
        idx = s._idx.copy()
        idx[:, axis] += off
        parts.append(idx)
    idx = _np.concatenate(parts).reshape(-1, rank)
    shape = shapes[0].copy()
    shape[axis] = shapes[:, axis].sum()
    merged = SparseTensor(idx, concat_values([s._values for s in inputs]), shape)
    return _reordered(merged, row_major_order(idx, shape))


def add(a, b, threshold=0, thresh=None):
    """sparse + sparse is sparse (entries whose sum is below `threshold` in magnitude dropped); with one dense
    operand the result is dense."""
    threshold = thresh if thresh is not None else threshold
    if not isinstance(a, SparseTensor) or not isinstance(b, SparseTensor):
        sparse, dense = (a, b) if isinstance(a, SparseTensor) else (b, a)
        check_sparse(sparse, "tf.sparse.add")
        return _ops.add(values_of(dense, sparse.dtype), to_dense(sparse, validate_indices=False))
    if a.shape != b.shape:
        raise InvalidArgumentError(f"tf.sparse.add: operands have shapes {a._shape.tolist()} and "
                                   f"{b._shape.tolist()}; they must match")
    if a.dtype != b.dtype:
        raise TypeError(f"tf.sparse.add: operands have dtypes {a.dtype.name} and {b.dtype.name}; cast one of them")
    keys_a = _np.ravel_multi_index(a._idx.T, a._shape) if len(a._idx) else _np.zeros(0, _np.int64)
    keys_b = _np.ravel_multi_index(b._idx.T, b._shape) if len(b._idx) else _np.zeros(0, _np.int64)
    keys = _np.union1d(keys_a, keys_b)
    at_a = _np.full(len(keys), -1, _np.int64)
    at_b = at_a.copy()
    at_a[_np.searchsorted(keys, keys_a)] = _np.arange(len(keys_a))
    at_b[_np.searchsorted(keys, keys_b)] = _np.arange(len(keys_b))
    values = _ops.add(take_or_fill(a._values, at_a, 0), take_or_fill(b._values, at_b, 0))
    idx = _np.stack(_np.unravel_index(keys, a._shape), axis=1).astype(_np.int64).reshape(-1, len(a._shape))
    out = SparseTensor(idx, values, a._shape)
    if threshold:
        out = retain(out, _np.abs(values.numpy()) >= threshold)
    return out


def map_values(op, *args, **kwargs):
    """op applied to the values of the SparseTensor arguments, which must all have the same indices."""
    sparse = [a for a in list(args) + list(kwargs.values()) if isinstance(a, SparseTensor)]
    if not sparse:
        raise ValueError("tf.sparse.map_values needs at least one SparseTensor argument")
    first = sparse[0]
    for s in sparse[1:]:
        if s._idx.shape != first._idx.shape or _np.any(s._idx != first._idx) or _np.any(s._shape != first._shape):
            raise InvalidArgumentError("tf.sparse.map_values: the SparseTensor arguments have different indices or "
                                       "dense shapes; they must be the same")
    unwrap = lambda a: a._values if isinstance(a, SparseTensor) else a  # noqa: E731
    values = op(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
    return first.with_values(values)


def _reduce_axes(sp, axis, what):
    rank = len(sp._shape)
    if axis is None:
        return list(range(rank))
    axes = [int(a) for a in _np.asarray(axis).reshape(-1)]
    for a in axes:
        if not -rank <= a < rank:
            raise InvalidArgumentError(f"{what}: axis {a} is out of range for a rank-{rank} tensor")
    return sorted({a % rank for a in axes})


def _grouped(sp, axes, keepdims):
    """For each value, the flat position of its reduced element; the output's shape; and its index rows."""
    kept = [d for d in range(len(sp._shape)) if d not in axes]
    out_idx = sp._idx.copy()
    out_idx[:, axes] = 0
    shape = sp._shape.copy()
    shape[axes] = 1
    keys = _np.ravel_multi_index(out_idx.T, shape) if len(out_idx) else _np.zeros(0, _np.int64)
    out_shape = shape if keepdims else shape[kept]
    return keys, shape, out_shape, kept


def _reduction(name, combine):
    def reduce(sp_input, axis=None, keepdims=None, output_is_sparse=False, name=None):
        what = f"tf.sparse.{reduce.__name__}"
        sp = check_sparse(sp_input, what)
        if is_strings(sp._values):
            raise TypeError(f"{what} reduces numbers, got a tf.string SparseTensor")
        axes = _reduce_axes(sp, axis, what)
        keys, shape, out_shape, kept = _grouped(sp, axes, keepdims)
        if output_is_sparse:
            present = _np.unique(keys)
            values = combine(sp, axes, keys, present)
            idx = _np.stack(_np.unravel_index(present, shape), axis=1).astype(_np.int64).reshape(-1, len(shape))
            return reorder(SparseTensor(idx if keepdims else idx[:, kept], values, out_shape))
        everywhere = _np.arange(int(_np.prod(shape)))
        return _ops.reshape(combine(sp, axes, keys, everywhere), [int(d) for d in out_shape])

    reduce.__name__ = name
    return reduce


def _sum_at(sp, axes, keys, targets):
    """The sum of the values landing on each of `targets`: to_dense then a sum, so that it has a gradient."""
    dense = _ops.reduce_sum(to_dense(sp, validate_indices=False), axes, True)
    return take(_ops.reshape(dense, [-1]), targets)


def _max_at(sp, axes, keys, targets):
    """The largest value landing on each target, 0 where none does (as TF's kernel): computed in NumPy, as TF's
    sparse reduce_max has no gradient."""
    v = sp._values.numpy()
    low = _np.finfo(v.dtype).min if v.dtype.kind == "f" else _np.iinfo(v.dtype).min
    out = _np.full(len(targets), low, v.dtype)
    where = _np.searchsorted(targets, keys)
    _np.maximum.at(out, where, v)
    out[_np.isin(targets, keys, invert=True)] = 0
    return _ops.convert_to_tensor(out, None, None)


reduce_sum = _reduction("reduce_sum", _sum_at)
reduce_max = _reduction("reduce_max", _max_at)


def sparse_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """sp_a @ b with one operand sparse (either); through to_dense, so it is differentiable w.r.t. both."""
    a = to_dense(sp_a, validate_indices=False) if isinstance(sp_a, SparseTensor) else values_of(sp_a)
    b = to_dense(b, validate_indices=False) if isinstance(b, SparseTensor) else values_of(b, a.dtype)
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise ValueError(f"tf.sparse.sparse_dense_matmul multiplies matrices, got shapes {a.shape} and {b.shape}")
    inner_a, inner_b = a.shape[0 if adjoint_a else 1], b.shape[1 if adjoint_b else 0]
    if inner_a != inner_b:
        raise InvalidArgumentError(f"tf.sparse.sparse_dense_matmul: cannot multiply {a.shape}{'ᵀ' * adjoint_a} by "
                                   f"{b.shape}{'ᵀ' * adjoint_b}: inner dimensions {inner_a} and {inner_b} differ")
    return _ops.matmul(a, b, bool(adjoint_a), bool(adjoint_b))


def to_indicator(sp_input, vocab_size, name=None):
    """A dense bool tensor of shape dense_shape[:-1] + [vocab_size], True at each row's values."""
    sp = check_sparse(sp_input, "tf.sparse.to_indicator")
    ids = sp._values.numpy() if not is_strings(sp._values) else None
    if ids is None or ids.dtype.kind not in "iu":
        raise TypeError("tf.sparse.to_indicator needs integer values (ids below vocab_size)")
    vocab_size = int(vocab_size)
    if _np.any((ids < 0) | (ids >= vocab_size)):
        bad = ids[(ids < 0) | (ids >= vocab_size)][0]
        raise InvalidArgumentError(f"tf.sparse.to_indicator: value {bad} is outside [0, vocab_size={vocab_size})")
    out = _np.zeros(tuple(sp._shape[:-1]) + (vocab_size,), bool)
    out[tuple(sp._idx[:, :-1].T) + (ids,)] = True
    return _ops.convert_to_tensor(out, None, None)


def fill_empty_rows(sp_input, default_value, name=None):
    """(sp_input with `default_value` at [row, 0, ...] of each row that has no value, a bool vector of those
    rows)."""
    sp = check_sparse(sp_input, "tf.sparse.fill_empty_rows")
    rows = int(sp._shape[0])
    empty = _np.ones(rows, bool)
    empty[sp._idx[:, 0]] = False
    added = _np.zeros((int(empty.sum()), len(sp._shape)), _np.int64)
    added[:, 0] = _np.flatnonzero(empty)
    idx = _np.concatenate([sp._idx, added])
    positions = _np.concatenate([_np.arange(len(sp._idx)), _np.full(len(added), -1)])
    order = _np.argsort(idx[:, 0], kind="stable")
    values = take_or_fill(sp._values, positions[order], default_value)
    empty_rows = _ops.convert_to_tensor(empty, None, None)
    return SparseTensor(idx[order], values, sp._shape), empty_rows
