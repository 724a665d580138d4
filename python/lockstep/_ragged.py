"""tf.RaggedTensor, tf.RaggedTensorSpec and the row partitions under them (tf.experimental.RowPartition,
DynamicRaggedShape). Row splits are NumPy int64 bookkeeping; values move with lockstep's gather, so that GradientTape
differentiates to_tensor, indexing and the elementwise operators w.r.t. the flat values."""
import builtins as _builtins

import numpy as _np

from . import _lockstep, dtypes as _dtypes
from ._sparse import (SparseTensor, concat_values, is_strings, take, take_or_fill, values_of)
from ._tensor import Tensor, TensorShape
from .errors import InvalidArgumentError

_ops = _lockstep.ops

__all__ = ["RaggedTensor", "RaggedTensorSpec"]


def _numpy_int64(value, what):
    a = _np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers (tf.int64), got {a.dtype}")
    return a.astype(_np.int64)


def _index_tensor(a):
    return _ops.convert_to_tensor(_np.asarray(a, _np.int64), None, None)


def _check_row_splits_dtype(dtype):
    if dtype is not None and _dtypes.as_dtype(dtype) != _dtypes.int64:
        raise NotImplementedError(f"row_splits_dtype={_dtypes.as_dtype(dtype).name} is not implemented by lockstep "
                                  "(see docs/python.md); row partitions are tf.int64")


class RowPartition:
    """How a ragged dimension splits a sequence of values into rows, as tf.experimental.RowPartition: the row
    splits (row i is values[splits[i]:splits[i + 1]]), and the row length when every row has the same one."""

    def __init__(self, row_splits, uniform_row_length=None, internal=False):
        if not internal:
            raise ValueError("RowPartition's constructor is private; use a factory such as "
                             "RowPartition.from_row_lengths()")
        self._splits = row_splits
        self._uniform = uniform_row_length

    @classmethod
    def from_row_splits(cls, row_splits, validate=True, dtype=None, dtype_hint=None):
        _check_row_splits_dtype(dtype)
        splits = _numpy_int64(row_splits, "row_splits")
        if splits.ndim != 1 or len(splits) == 0:
            raise ValueError(f"row_splits must be a non-empty vector, got shape {list(splits.shape)}")
        if validate:
            if splits[0] != 0:
                raise InvalidArgumentError(f"Arguments to from_row_splits do not form a valid RaggedTensor: "
                                           f"row_splits must start with 0, got {splits.tolist()}")
            if _np.any(_np.diff(splits) < 0):
                raise InvalidArgumentError(f"Arguments to from_row_splits do not form a valid RaggedTensor: "
                                           f"row_splits must not decrease, got {splits.tolist()}")
        return cls(splits, internal=True)

    @classmethod
    def from_row_lengths(cls, row_lengths, validate=True, dtype=None, dtype_hint=None):
        _check_row_splits_dtype(dtype)
        lengths = _numpy_int64(row_lengths, "row_lengths")
        if lengths.ndim != 1:
            raise ValueError(f"row_lengths must be a vector, got shape {list(lengths.shape)}")
        if validate and _np.any(lengths < 0):
            raise InvalidArgumentError(f"Arguments to from_row_lengths do not form a valid RaggedTensor: "
                                       f"row_lengths must be >= 0, got {lengths.tolist()}")
        return cls(_np.concatenate([[0], _np.cumsum(lengths)]).astype(_np.int64), internal=True)

    @classmethod
    def from_value_rowids(cls, value_rowids, nrows=None, validate=True, dtype=None, dtype_hint=None):
        _check_row_splits_dtype(dtype)
        ids = _numpy_int64(value_rowids, "value_rowids")
        if ids.ndim != 1:
            raise ValueError(f"value_rowids must be a vector, got shape {list(ids.shape)}")
        nrows = (int(ids[-1]) + 1 if len(ids) else 0) if nrows is None else int(_numpy_int64(nrows, "nrows"))
        if validate and (_np.any(_np.diff(ids) < 0) or _np.any(ids < 0) or _np.any(ids >= nrows)):
            raise InvalidArgumentError(f"Arguments to from_value_rowids do not form a valid RowPartition: "
                                       f"value_rowids {ids.tolist()} must be sorted and in [0, nrows={nrows})")
        counts = _np.bincount(ids, minlength=nrows)[:nrows] if len(ids) else _np.zeros(nrows, _np.int64)
        return cls(_np.concatenate([[0], _np.cumsum(counts)]).astype(_np.int64), internal=True)

    @classmethod
    def from_row_starts(cls, row_starts, nvals, validate=True, dtype=None, dtype_hint=None):
        starts = _numpy_int64(row_starts, "row_starts")
        return cls.from_row_splits(_np.append(starts, int(_numpy_int64(nvals, "nvals"))), validate, dtype)

    @classmethod
    def from_row_limits(cls, row_limits, validate=True, dtype=None, dtype_hint=None):
        return cls.from_row_splits(_np.concatenate([[0], _numpy_int64(row_limits, "row_limits")]), validate, dtype)

    @classmethod
    def from_uniform_row_length(cls, uniform_row_length, nvals, nrows=None, validate=True, dtype=None,
                                dtype_hint=None):
        _check_row_splits_dtype(dtype)
        length, nvals = int(_numpy_int64(uniform_row_length, "uniform_row_length")), int(nvals)
        if length < 0:
            raise InvalidArgumentError(f"uniform_row_length must be >= 0, got {length}")
        nrows = (nvals // length if length else 0) if nrows is None else int(nrows)
        if validate and nrows * length != nvals:
            raise InvalidArgumentError(f"Arguments to from_uniform_row_length do not form a valid RowPartition: "
                                       f"{nvals} values do not make rows of {length}")
        return cls(_np.arange(nrows + 1, dtype=_np.int64) * length, uniform_row_length=length, internal=True)

    dtype = property(lambda self: _dtypes.int64)
    static_nrows = property(lambda self: len(self._splits) - 1)
    static_nvals = property(lambda self: int(self._splits[-1]))
    static_uniform_row_length = property(lambda self: self._uniform)

    def row_splits(self):
        return _index_tensor(self._splits)

    def row_lengths(self):
        return _index_tensor(_np.diff(self._splits))

    def row_starts(self):
        return _index_tensor(self._splits[:-1])

    def row_limits(self):
        return _index_tensor(self._splits[1:])

    def value_rowids(self):
        return _index_tensor(self._rowids())

    def _rowids(self):
        return _np.repeat(_np.arange(len(self._splits) - 1, dtype=_np.int64), _np.diff(self._splits))

    def nrows(self):
        return _index_tensor(len(self._splits) - 1)

    def nvals(self):
        return _index_tensor(self._splits[-1])

    def uniform_row_length(self):
        return None if self._uniform is None else _index_tensor(self._uniform)

    def is_uniform(self):
        return self._uniform is not None

    def with_row_splits_dtype(self, dtype):
        _check_row_splits_dtype(dtype)
        return self

    def __repr__(self):
        return f"tf.RowPartition(row_splits={self._splits})"


def _partition_of(splits, uniform=None):
    return RowPartition(_np.asarray(splits, _np.int64), uniform, internal=True)


def _nrows(values):
    return values._nrows_static if isinstance(values, RaggedTensor) else values.shape[0]


def _take_rows(values, rows):
    """values[rows] along the first axis, for a Tensor, StringTensor or RaggedTensor."""
    rows = _np.asarray(rows, _np.int64)
    if not isinstance(values, RaggedTensor):
        return take(values, rows)
    splits = values._partition._splits
    lengths = splits[rows + 1] - splits[rows]
    new_splits = _np.concatenate([[0], _np.cumsum(lengths)]).astype(_np.int64)
    inner = _np.repeat(splits[rows] - new_splits[:-1], lengths) + _np.arange(new_splits[-1], dtype=_np.int64)
    return RaggedTensor._from(_take_rows(values._values, inner), _partition_of(new_splits))


def _concat_rows(parts):
    """The rows of each part one after another (tf.concat along axis 0), parts all ragged or all dense."""
    if not isinstance(parts[0], RaggedTensor):
        return concat_values(parts)
    splits = [parts[0]._partition._splits]
    for p in parts[1:]:
        splits.append(p._partition._splits[1:] + splits[-1][-1])
    return RaggedTensor._from(_concat_rows([p._values for p in parts]), _partition_of(_np.concatenate(splits)))


def _check_nvals(values, partition, factory):
    if _nrows(values) != partition.static_nvals:
        raise InvalidArgumentError(f"Arguments to {factory} do not form a valid RaggedTensor: the partition covers "
                                   f"{partition.static_nvals} values but values has {_nrows(values)} rows")


def _values_arg(values):
    return values if isinstance(values, RaggedTensor) else values_of(values)


class RaggedTensor:
    """A tensor whose rows have different lengths, as tf.RaggedTensor: `values` (a Tensor, or a RaggedTensor for
    more ragged dimensions) split into rows by a RowPartition. Made by its from_* factories or tf.ragged.constant."""

    def __init__(self, values, row_partition, internal=False):
        if not internal:
            raise ValueError("RaggedTensor's constructor is private; use a factory such as "
                             "RaggedTensor.from_row_lengths() or tf.ragged.constant()")
        self._values, self._partition = values, row_partition

    @classmethod
    def _from(cls, values, partition):
        return cls(values, partition, internal=True)

    # Factories ------------------------------------------------------------------------------------------------------

    @classmethod
    def _from_partition(cls, values, partition, factory, validate=True):
        values = _values_arg(values)
        if len(values.shape) == 0:
            raise ValueError(f"{factory}: values must have rank >= 1, got a scalar")
        if validate:
            _check_nvals(values, partition, factory)
        return cls._from(values, partition)

    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        return cls._from_partition(values, RowPartition.from_row_splits(row_splits, validate), "from_row_splits")

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        return cls._from_partition(values, RowPartition.from_row_lengths(row_lengths, validate), "from_row_lengths")

    @classmethod
    def from_value_rowids(cls, values, value_rowids, nrows=None, name=None, validate=True):
        return cls._from_partition(values, RowPartition.from_value_rowids(value_rowids, nrows, validate),
                                   "from_value_rowids")

    @classmethod
    def from_row_starts(cls, values, row_starts, name=None, validate=True):
        values = _values_arg(values)
        return cls._from_partition(values, RowPartition.from_row_starts(row_starts, _nrows(values), validate),
                                   "from_row_starts")

    @classmethod
    def from_row_limits(cls, values, row_limits, name=None, validate=True):
        return cls._from_partition(values, RowPartition.from_row_limits(row_limits, validate), "from_row_limits")

    @classmethod
    def from_uniform_row_length(cls, values, uniform_row_length, nrows=None, validate=True, name=None):
        values = _values_arg(values)
        partition = RowPartition.from_uniform_row_length(uniform_row_length, _nrows(values), nrows, validate)
        return cls._from_partition(values, partition, "from_uniform_row_length")

    @classmethod
    def _from_nested(cls, flat_values, partitions):
        result = _values_arg(flat_values)
        for p in reversed(partitions):
            result = cls._from_partition(result, p, "from_nested_row_splits")
        return result

    @classmethod
    def from_nested_row_splits(cls, flat_values, nested_row_splits, name=None, validate=True):
        if isinstance(nested_row_splits, (Tensor, _np.ndarray)) and len(nested_row_splits.shape) == 1:
            raise TypeError("nested_row_splits must be a list of row_splits vectors, not one vector")
        return cls._from_nested(flat_values, [RowPartition.from_row_splits(s, validate) for s in nested_row_splits])

    @classmethod
    def from_nested_row_lengths(cls, flat_values, nested_row_lengths, name=None, validate=True):
        return cls._from_nested(flat_values,
                                [RowPartition.from_row_lengths(s, validate) for s in nested_row_lengths])

    @classmethod
    def from_nested_value_rowids(cls, flat_values, nested_value_rowids, nested_nrows=None, name=None, validate=True):
        nested_nrows = [None] * len(nested_value_rowids) if nested_nrows is None else list(nested_nrows)
        return cls._from_nested(flat_values, [RowPartition.from_value_rowids(ids, n, validate)
                                              for ids, n in zip(nested_value_rowids, nested_nrows)])

    @classmethod
    def from_tensor(cls, tensor, lengths=None, padding=None, ragged_rank=1, name=None, row_splits_dtype=_dtypes.int64):
        _check_row_splits_dtype(row_splits_dtype)
        t = values_of(tensor)
        rank, ragged_rank = len(t.shape), int(ragged_rank)
        if not 0 < ragged_rank < rank:
            raise ValueError(f"from_tensor: ragged_rank must be in [1, rank of tensor = {rank}), got {ragged_rank}")
        if lengths is not None and padding is not None:
            raise ValueError("from_tensor: give lengths or padding, not both")
        if ragged_rank > 1:
            if lengths is not None:
                raise NotImplementedError("RaggedTensor.from_tensor with lengths and ragged_rank > 1 is not "
                                          "implemented by lockstep (see docs/python.md)")
            d0, d1 = t.shape[0], t.shape[1]
            inner = cls.from_tensor(_reshape(t, [d0 * d1] + list(t.shape[2:])), padding=padding,
                                    ragged_rank=ragged_rank - 1)
            return cls._from(inner, RowPartition.from_row_lengths(_np.full(d0, d1)))
        n, width = t.shape[0], t.shape[1]
        if padding is not None:
            lengths = _lengths_without_padding(t, padding)
        if lengths is None:
            flat = _reshape(t, [n * width] + list(t.shape[2:]))
            return cls._from(flat, RowPartition.from_uniform_row_length(width, n * width, n))
        lengths = _np.minimum(_numpy_int64(lengths, "lengths").reshape(-1), width)
        if len(lengths) != n:
            raise ValueError(f"from_tensor: lengths has {len(lengths)} entries for a tensor of {n} rows")
        keep = (_np.arange(n)[:, None] * width + _np.arange(width)[None, :])[_np.arange(width)[None, :]
                                                                            < lengths[:, None]]
        flat = take(_reshape(t, [n * width] + list(t.shape[2:])), keep)
        return cls._from(flat, RowPartition.from_row_lengths(lengths))

    @classmethod
    def from_sparse(cls, st_input, name=None, row_splits_dtype=_dtypes.int64):
        _check_row_splits_dtype(row_splits_dtype)
        if not isinstance(st_input, SparseTensor):
            raise TypeError(f"from_sparse expects a tf.SparseTensor, got {type(st_input).__name__}")
        idx, shape = st_input._idx, st_input._shape
        if len(shape) != 2:
            raise ValueError(f"from_sparse needs a SparseTensor of rank 2, got rank {len(shape)}")
        rows = idx[:, 0]
        counts = _np.bincount(rows, minlength=int(shape[0])) if len(rows) else _np.zeros(int(shape[0]), _np.int64)
        splits = _np.concatenate([[0], _np.cumsum(counts)])
        expected = _np.arange(len(idx)) - _np.repeat(splits[:-1], counts)
        if _np.any(_np.diff(rows) < 0) or _np.any(idx[:, 1] != expected):
            raise InvalidArgumentError("from_sparse: the SparseTensor is not right-ragged: its indices must be "
                                       "sorted and each row's columns must be 0, 1, 2, ... with no gaps")
        return cls._from(st_input.values, _partition_of(splits))

    # Properties ---------------------------------------------------------------------------------------------------

    values = property(lambda self: self._values)
    row_splits = property(lambda self: self._partition.row_splits())
    _nrows_static = property(lambda self: self._partition.static_nrows)
    dtype = property(lambda self: self._values.dtype)
    row_splits_dtype = property(lambda self: _dtypes.int64)
    _row_partition = property(lambda self: self._partition)

    @property
    def flat_values(self):
        v = self._values
        while isinstance(v, RaggedTensor):
            v = v._values
        return v

    @property
    def ragged_rank(self):
        return 1 + (self._values.ragged_rank if isinstance(self._values, RaggedTensor) else 0)

    @property
    def _partitions(self):
        out, v = [], self
        while isinstance(v, RaggedTensor):
            out.append(v._partition)
            v = v._values
        return out

    @property
    def nested_row_splits(self):
        return tuple(p.row_splits() for p in self._partitions)

    @property
    def shape(self):
        inner = list(self._values.shape)[1:]
        return TensorShape([self._nrows_static, self._partition._uniform] + inner)

    def get_shape(self):
        return self.shape

    @property
    def uniform_row_length(self):
        return self._partition.uniform_row_length()

    def row_lengths(self, axis=1, name=None):
        rank = self.shape.rank
        axis = axis + rank if axis < 0 else axis
        if axis == 0:
            return _index_tensor(self._nrows_static)
        if axis == 1:
            return self._partition.row_lengths()
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.row_lengths(axis - 1))
        if axis >= rank:
            raise ValueError(f"row_lengths: axis {axis} is out of range for a tensor of rank {rank}")
        return self.with_values(_index_tensor(_np.full(_nrows(self._values), self._values.shape[axis - 1])))

    def value_rowids(self, name=None):
        return self._partition.value_rowids()

    def nested_value_rowids(self, name=None):
        return tuple(p.value_rowids() for p in self._partitions)

    def nested_row_lengths(self, name=None):
        return tuple(p.row_lengths() for p in self._partitions)

    def nrows(self, out_type=None, name=None):
        return self._partition.nrows()

    def row_starts(self, name=None):
        return self._partition.row_starts()

    def row_limits(self, name=None):
        return self._partition.row_limits()

    def _bounds(self):
        lengths = _np.diff(self._partition._splits)
        inner = self._values._bounds() if isinstance(self._values, RaggedTensor) else list(self._values.shape)
        return [self._nrows_static, int(lengths.max()) if len(lengths) else 0] + inner[1:]

    def bounding_shape(self, axis=None, name=None, out_type=None):
        bounds = _np.asarray(self._bounds(), _np.int64)
        return _index_tensor(bounds if axis is None else bounds[axis])

    # Conversions --------------------------------------------------------------------------------------------------

    def with_values(self, new_values):
        new_values = _values_arg(new_values)
        _check_nvals(new_values, self._partition, "with_values")
        return RaggedTensor._from(new_values, self._partition)

    def with_flat_values(self, new_values):
        if isinstance(self._values, RaggedTensor):
            return self.with_values(self._values.with_flat_values(new_values))
        return self.with_values(new_values)

    def with_row_splits_dtype(self, dtype):
        _check_row_splits_dtype(dtype)
        return self

    def to_tensor(self, default_value=None, name=None, shape=None):
        """The rows padded with default_value (0, or b"" for strings) to the bounding shape, or to `shape`: one
        gather, so the gradient reaches the flat values."""
        bounds = self._bounds()
        want = [None] * len(bounds) if shape is None else list(TensorShape(shape))
        if len(want) != len(bounds):
            raise ValueError(f"to_tensor: shape {want} must have rank {len(bounds)}")
        dims = [b if w is None else int(w) for b, w in zip(bounds, want)]
        if default_value is None:
            default_value = b"" if is_strings(self.flat_values) else 0
        if isinstance(self._values, RaggedTensor):
            values = self._values.to_tensor(default_value, shape=[None] + dims[2:])
        else:
            values = self._values
            if list(values.shape[1:]) != dims[2:]:
                raise NotImplementedError("RaggedTensor.to_tensor with a shape that changes uniform inner "
                                          "dimensions is not implemented by lockstep (see docs/python.md)")
        splits = self._partition._splits
        rows, cols = _np.meshgrid(_np.arange(dims[0]), _np.arange(dims[1]), indexing="ij")
        nrows = self._nrows_static
        starts = _np.where(rows < nrows, splits[_np.minimum(rows, nrows)], 0)
        limits = _np.where(rows < nrows, splits[_np.minimum(rows + 1, nrows)], 0)
        positions = _np.where(starts + cols < limits, starts + cols, -1).reshape(-1)
        inner = list(values.shape[1:])
        if is_strings(values):
            table = _np.append(values._values.reshape(len(values._values), -1),
                               _np.full((1, int(_np.prod(inner))), default_value, object), axis=0)
            from .data._structure import StringTensor

            return StringTensor(table[_np.where(positions < 0, len(table) - 1, positions)].reshape(dims))
        fill = _ops.broadcast_to(values_of(default_value, values.dtype), [1] + inner)
        table = _ops.concat([values, fill], 0)
        return _reshape(_ops.gather(table, _np.where(positions < 0, _nrows(values), positions)), dims)

    def to_list(self):
        splits = self._partition._splits
        inner = self._values.to_list() if isinstance(self._values, RaggedTensor) else self._values.numpy().tolist()
        return [inner[splits[i]:splits[i + 1]] for i in range(self._nrows_static)]

    def numpy(self):
        """An array of the rows: a plain array when they all have one shape, else an object array of rows."""
        inner = self._values.numpy()
        splits = self._partition._splits
        rows = [inner[splits[i]:splits[i + 1]] for i in range(self._nrows_static)]
        if not rows:
            return _np.zeros((0, 0) + tuple(inner.shape[1:]), inner.dtype)
        if any(len(r) != len(rows[0]) for r in rows):
            out = _np.empty(len(rows), object)
            for i, r in enumerate(rows):
                out[i] = r
            return out
        return _np.array(rows)

    def to_sparse(self, name=None):
        idx, dense_shape = self._sparse_indices()
        return SparseTensor(idx, _reshape(self.flat_values, [-1]) if not is_strings(self.flat_values)
                            else type(self.flat_values)(self.flat_values._values.reshape(-1)), dense_shape)

    def _sparse_indices(self):
        """Index rows of every flat element, in row-major order, and the bounding shape."""
        if isinstance(self._values, RaggedTensor):
            inner, _ = self._values._sparse_indices()
        else:
            inner_shape = list(self._values.shape)
            inner = _np.stack(_np.unravel_index(_np.arange(int(_np.prod(inner_shape))), inner_shape), axis=1)
            inner = inner.reshape(-1, len(inner_shape)).astype(_np.int64)
        rowids = self._partition._rowids()
        first = inner[:, 0]
        head = _np.stack([rowids[first], first - self._partition._splits[rowids[first]]], axis=1)
        return _np.concatenate([head, inner[:, 1:]], axis=1), _np.asarray(self._bounds(), _np.int64)

    def merge_dims(self, outer_axis, inner_axis):
        rank = self.shape.rank
        outer_axis, inner_axis = [a + rank if a < 0 else a for a in (outer_axis, inner_axis)]
        if not 0 <= outer_axis <= inner_axis < rank:
            raise ValueError(f"merge_dims: need 0 <= outer_axis ({outer_axis}) <= inner_axis ({inner_axis}) < rank "
                             f"({rank})")
        if outer_axis == inner_axis:
            return self
        if outer_axis >= 2 or (outer_axis == 1 and not isinstance(self._values, RaggedTensor)
                               and self._values.shape[1] is None):
            return self.with_values(_merge(self._values, outer_axis - 1, inner_axis - 1))
        if outer_axis == 0:
            return _merge(self._values, 0, inner_axis - 1)
        # outer_axis == 1: each row's sub-rows join into one row
        if isinstance(self._values, RaggedTensor):
            splits = self._values._partition._splits[self._partition._splits]
            joined = RaggedTensor._from(self._values._values, _partition_of(splits))
        else:
            width = self._values.shape[1]
            joined = RaggedTensor._from(_reshape(self._values, [-1] + list(self._values.shape[2:])),
                                        _partition_of(self._partition._splits * width))
        return joined.merge_dims(1, inner_axis - 1)

    # Indexing and operators ---------------------------------------------------------------------------------------

    def __getitem__(self, key):
        return _getitem(self, key if isinstance(key, tuple) else (key,))

    def __iter__(self):
        return (self[i] for i in range(self._nrows_static))

    def __bool__(self):
        raise TypeError("RaggedTensor may not be used as a boolean.")

    __nonzero__ = __bool__

    def __repr__(self):
        with _np.printoptions(formatter={"all": _format}):
            return f"<tf.RaggedTensor {_format(self.numpy())}>"

    __str__ = __repr__


def _reshape(t, shape):
    if is_strings(t):
        return type(t)(t._values.reshape(shape))
    return _ops.reshape(t, [int(d) for d in shape])


def _merge(values, outer_axis, inner_axis):
    """Dims outer_axis..inner_axis of a Tensor or RaggedTensor merged into one."""
    if isinstance(values, RaggedTensor):
        return values.merge_dims(outer_axis, inner_axis)
    shape = list(values.shape)
    merged = int(_np.prod(shape[outer_axis:inner_axis + 1]))
    return _reshape(values, shape[:outer_axis] + [merged] + shape[inner_axis + 1:])


def _format(x):
    """TF's eager RaggedTensor text: NumPy's, with commas between elements."""
    if isinstance(x, _np.ndarray):
        return _np.array2string(x, separator=", ") if x.size else repr(x.tolist())
    return str(x)


def _lengths_without_padding(t, padding):
    a = t.numpy()
    pad = _np.asarray(padding.numpy() if hasattr(padding, "numpy") else padding)
    not_pad = a != pad
    not_pad = not_pad.reshape(a.shape[0], a.shape[1], -1).any(axis=2)
    last = _np.where(not_pad.any(axis=1), a.shape[1] - _np.argmax(not_pad[:, ::-1], axis=1), 0)
    return last.astype(_np.int64)


def _expand_ellipsis(rt, key):
    if Ellipsis not in key:
        return key
    at = key.index(Ellipsis)
    explicit = sum(1 for k in key if k is not Ellipsis)
    return key[:at] + (slice(None),) * (rt.shape.rank - explicit) + key[at + 1:]


def _rows_of(nrows, k, what="Row key"):
    """The rows an int or slice key picks on an axis of nrows; an int key also says the axis goes."""
    if isinstance(k, slice):
        return _np.arange(*k.indices(nrows)), False
    if k is None:
        raise NotImplementedError("indexing a RaggedTensor with tf.newaxis is not implemented by lockstep "
                                  "(see docs/python.md)")
    if hasattr(k, "numpy"):
        k = k.numpy()
    if not isinstance(k, (int, _np.integer)) or isinstance(k, bool):
        raise TypeError(f"RaggedTensor indices must be ints or slices, got {type(k).__name__}")
    if not -nrows <= int(k) < nrows:
        raise IndexError(f"{what} {int(k)} out of bounds")
    return _np.asarray([int(k) % nrows]), True


def _getitem(rt, key):
    key = _expand_ellipsis(rt, key)
    if not key:
        return rt
    rows, drop = _rows_of(rt._nrows_static, key[0])
    splits = rt._partition._splits
    if drop:
        row = _take_rows(rt._values, _np.arange(splits[rows[0]], splits[rows[0] + 1]))
        try:
            return _index_inner(row, key[1:])
        except IndexError as e:  # a row too short for the next key: TF's strided slice error
            raise InvalidArgumentError(f"row {int(rows[0])} of the RaggedTensor: {e}") from None
    picked = _take_rows(rt, rows)
    if len(key) == 1:
        return picked
    # The second key picks positions inside each (ragged) row.
    starts, limits = picked._partition._splits[:-1], picked._partition._splits[1:]
    k = key[1]
    if isinstance(k, slice):
        positions, lengths = [], []
        for s, e in zip(starts, limits):
            chosen = _np.arange(s, e)[k]
            positions.append(chosen)
            lengths.append(len(chosen))
        positions = _np.concatenate(positions).astype(_np.int64) if positions else _np.zeros(0, _np.int64)
        inner = _index_inner(_take_rows(picked._values, positions), (slice(None),) + key[2:])
        return RaggedTensor._from(inner, RowPartition.from_row_lengths(lengths))
    if picked._partition._uniform is None:
        raise ValueError("Cannot index into an inner ragged dimension.")
    lengths = limits - starts
    k = int(k)
    if _np.any((k >= lengths) | (k < -lengths)):
        raise InvalidArgumentError(f"index {k} is out of bounds for a ragged dimension whose rows have lengths "
                                   f"{lengths.tolist()}; every row must have it (use a slice to keep rows shorter)")
    positions = _np.where(k >= 0, starts + k, limits + k)
    return _index_inner(_take_rows(picked._values, positions), (slice(None),) + key[2:])


def _index_inner(values, key):
    if not key or all(isinstance(k, slice) and k == slice(None) for k in key):
        return values
    if isinstance(values, RaggedTensor):
        return _getitem(values, key)
    if is_strings(values):
        return type(values)(values._values[key])
    return values[key]


def _broadcast_dense(rt, dense):
    """`dense` laid out like rt's flat values, for an elementwise op: each ragged dimension of rt must meet a
    dimension of size 1 (repeated along the row) or the row length when every row has it."""
    inner_rank = len(rt.flat_values.shape) - 1
    if len(dense.shape) <= inner_rank:
        return dense
    rank = rt.shape.rank
    if len(dense.shape) > rank:
        raise ValueError(f"cannot broadcast a tensor of shape {dense.shape} to a RaggedTensor of rank {rank}")
    d = _reshape(dense, [1] * (rank - len(dense.shape)) + list(dense.shape))
    level = rt
    while isinstance(level, RaggedTensor):
        shape = list(d.shape)
        nrows, lengths = level._nrows_static, _np.diff(level._partition._splits)
        if shape[0] not in (1, nrows):
            raise InvalidArgumentError(f"Incompatible shapes: a dimension of {shape[0]} against {nrows} rows")
        if shape[1] == 1:
            d = _ops.broadcast_to(d, [nrows] + shape[1:])
            d = take(_reshape(d, [nrows] + shape[2:]), level._partition._rowids())
        elif _np.all(lengths == shape[1]):
            d = _reshape(_ops.broadcast_to(d, [nrows] + shape[1:]), [nrows * shape[1]] + shape[2:])
        else:
            raise InvalidArgumentError(f"Incompatible shapes: a dimension of {shape[1]} against ragged rows of "
                                       f"lengths {lengths.tolist()}")
        level = level._values
    return d


def _same_splits(a, b):
    pa, pb = a._partitions, b._partitions
    return len(pa) == len(pb) and all(
        len(x._splits) == len(y._splits) and _np.all(x._splits == y._splits) for x, y in zip(pa, pb))


def _operand(x, dtype):
    """A non-ragged operand as a tensor; a Python number takes the ragged tensor's dtype, as TF converts it."""
    if isinstance(x, (Tensor, _lockstep.Variable)) or is_strings(x):
        return x
    if isinstance(x, (str, bytes)) or (isinstance(x, (list, tuple)) and x and isinstance(x[0], (str, bytes))):
        return values_of(x)
    a = _np.asarray(x)
    if dtype.is_integer and a.dtype.kind == "f":
        raise InvalidArgumentError(f"cannot combine a {dtype.name} RaggedTensor with the float {x!r}; cast one of "
                                   "them with tf.cast")
    return values_of(x, dtype if a.dtype.kind in "biuf" and dtype != _dtypes.string else None)


def _elementwise(op, x, y):
    rx, ry = isinstance(x, RaggedTensor), isinstance(y, RaggedTensor)
    if rx and ry:
        if not _same_splits(x, y):
            raise InvalidArgumentError("Incompatible shapes: the RaggedTensors have different row splits; "
                                       "elementwise ops need the same row lengths at every ragged dimension")
        return x.with_flat_values(op(x.flat_values, y.flat_values))
    rt = x if rx else y
    other = _broadcast_dense(rt, _operand(y if rx else x, rt.dtype))
    flat = rt.flat_values
    return rt.with_flat_values(op(flat, other) if rx else op(other, flat))


def _string_equal(a, b):
    from .data._structure import StringTensor

    va = a._values if isinstance(a, StringTensor) else _np.asarray(a, object)
    vb = b._values if isinstance(b, StringTensor) else _np.asarray(b, object)
    va = _np.vectorize(lambda v: v.encode() if isinstance(v, str) else v, otypes=[object])(va)
    vb = _np.vectorize(lambda v: v.encode() if isinstance(v, str) else v, otypes=[object])(vb)
    return _ops.convert_to_tensor(_np.asarray(va == vb, bool), None, None)


def _equal(a, b):
    return _string_equal(a, b) if is_strings(a) or is_strings(b) else _ops.equal(a, b)


def _binary(op, reflected=False):
    if reflected:
        return lambda self, other: _elementwise(op, other, self)
    return lambda self, other: _elementwise(op, self, other)


def _pow(x, y):
    """pow; integer powers in NumPy, as lockstep's kernel takes floats (and integers have no gradient)."""
    x, y = values_of(x), values_of(y)
    if x.dtype.is_integer and y.dtype.is_integer:
        return _ops.convert_to_tensor(_np.power(x.numpy(), y.numpy()).astype(x.dtype.as_numpy_dtype), None, None)
    return _ops.pow(x, y)


def _mod(x, y):
    return _ops.subtract(x, _ops.multiply(_ops.floordiv(x, y), y))


for _name, _op in (("add", _ops.add), ("sub", _ops.subtract), ("mul", _ops.multiply), ("truediv", _ops.divide),
                   ("div", _ops.divide), ("floordiv", _ops.floordiv), ("mod", _mod), ("pow", _pow),
                   ("and", _ops.logical_and), ("or", _ops.logical_or),
                   ("xor", lambda a, b: _ops.logical_and(_ops.logical_or(a, b),
                                                         _ops.logical_not(_ops.logical_and(a, b))))):
    setattr(RaggedTensor, f"__{_name}__", _binary(_op))
    setattr(RaggedTensor, f"__r{_name}__", _binary(_op, reflected=True))
for _name, _op in (("eq", _equal), ("ne", lambda a, b: _ops.logical_not(_equal(a, b))), ("lt", _ops.less),
                   ("le", _ops.less_equal), ("gt", _ops.greater), ("ge", _ops.greater_equal)):
    setattr(RaggedTensor, f"__{_name}__", _binary(_op))
RaggedTensor.__hash__ = None
RaggedTensor.__neg__ = lambda self: self.with_flat_values(_ops.negative(self.flat_values))
RaggedTensor.__abs__ = lambda self: self.with_flat_values(_ops.abs(self.flat_values))
RaggedTensor.__invert__ = lambda self: self.with_flat_values(_ops.logical_not(self.flat_values))
del _name, _op


class RaggedTensorSpec:
    """The type of a RaggedTensor, as tf.RaggedTensorSpec: shape (None for ragged dimensions), dtype and
    ragged_rank (rank - 1 unless given)."""

    def __init__(self, shape=None, dtype=_dtypes.float32, ragged_rank=None, row_splits_dtype=_dtypes.int64,
                 flat_values_spec=None):
        _check_row_splits_dtype(row_splits_dtype)
        self._shape, self._dtype = TensorShape(shape), _dtypes.as_dtype(dtype)
        rank = self._shape.rank
        if ragged_rank is None:
            if rank is None:
                raise ValueError("RaggedTensorSpec: give ragged_rank when the shape's rank is unknown")
            ragged_rank = rank - 1
        if rank is not None and not 0 <= ragged_rank < _builtins.max(rank, 1):
            raise ValueError(f"RaggedTensorSpec: ragged_rank must be in [0, rank = {rank}), got {ragged_rank}")
        self._ragged_rank = int(ragged_rank)

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ragged_rank = property(lambda self: self._ragged_rank)
    row_splits_dtype = property(lambda self: _dtypes.int64)
    flat_values_spec = property(lambda self: None)
    value_type = property(lambda self: RaggedTensor)

    @classmethod
    def from_value(cls, value):
        return cls(value.shape, value.dtype, value.ragged_rank)

    def is_compatible_with(self, spec_or_value):
        other = spec_or_value if isinstance(spec_or_value, RaggedTensorSpec) else (
            RaggedTensorSpec.from_value(spec_or_value) if isinstance(spec_or_value, RaggedTensor) else None)
        if other is None or other.dtype != self.dtype or other.ragged_rank != self.ragged_rank:
            return False
        return self.shape.is_compatible_with(other.shape)

    def __eq__(self, other):
        return isinstance(other, RaggedTensorSpec) and (self._shape, self._dtype, self._ragged_rank) == (
            other._shape, other._dtype, other._ragged_rank)

    def __hash__(self):
        return hash((self._shape, self._dtype, self._ragged_rank))

    def __repr__(self):
        return f"RaggedTensorSpec({self._shape!r}, {self._dtype!r}, {self._ragged_rank}, tf.int64)"


class DynamicRaggedShape:
    """The shape of a (possibly ragged) tensor, as tf.experimental.DynamicRaggedShape: a length per dimension, a
    tuple of row lengths for a ragged one."""

    def __init__(self, row_partitions, inner_shape, dtype=None, validate=False, static_inner_shape=None):
        self._partitions = list(row_partitions)
        self._inner = [int(d) for d in _numpy_int64(inner_shape, "inner_shape").reshape(-1)]

    @classmethod
    def from_lengths(cls, lengths, num_row_partitions=None, dtype=_dtypes.int64):
        _check_row_splits_dtype(dtype)
        lengths = list(lengths)
        if not lengths:
            return cls([], [])
        if isinstance(lengths[0], (list, tuple)):
            raise ValueError("from_lengths: the first dimension must be a number (the number of rows)")
        ragged = [i for i, d in enumerate(lengths) if isinstance(d, (list, tuple, _np.ndarray, Tensor))]
        last = ragged[-1] if ragged else 0
        if num_row_partitions is None:
            num_row_partitions = last
        partitions, nvals = [], int(lengths[0])
        for d in lengths[1:num_row_partitions + 1]:
            if isinstance(d, (list, tuple, _np.ndarray, Tensor)):
                p = RowPartition.from_row_lengths(d)
                if p.static_nrows != nvals:
                    raise ValueError(f"from_lengths: {list(d)} has {p.static_nrows} rows where {nvals} are needed")
            else:
                p = RowPartition.from_uniform_row_length(int(d), nvals * int(d), nvals)
            partitions.append(p)
            nvals = p.static_nvals
        inner = [nvals] + [int(d) for d in lengths[num_row_partitions + 1:]]
        return cls(partitions, inner)

    @classmethod
    def from_tensor(cls, t, dtype=None):
        if isinstance(t, RaggedTensor):
            return cls(t._partitions, list(t.flat_values.shape))
        return cls([], list(values_of(t).shape))

    row_partitions = property(lambda self: tuple(self._partitions))
    num_row_partitions = property(lambda self: len(self._partitions))
    rank = property(lambda self: len(self._partitions) + len(self._inner))
    dtype = property(lambda self: _dtypes.int64)

    @property
    def inner_shape(self):
        return _index_tensor(self._inner)

    def static_lengths(self, ragged_lengths=True):
        out = [self._partitions[0].static_nrows] if self._partitions else list(self._inner[:1])
        for p in self._partitions:
            lengths = _np.diff(p._splits)
            out.append(p._uniform if p._uniform is not None else (tuple(lengths.tolist()) if ragged_lengths
                                                                 else None))
        return out + self._inner[1:]

    def __getitem__(self, axis):
        d = self.static_lengths(ragged_lengths=False)[axis]
        if d is None:
            raise ValueError(f"Index {axis} is not uniform")
        return _index_tensor(d)

    def _with_values(self, flat):
        """The flat values (shape inner_shape) as a tensor of this shape: a RaggedTensor, or `flat` itself."""
        result = flat
        for p in reversed(self._partitions):
            result = RaggedTensor._from(result, p)
        return result

    def __repr__(self):
        return f"<DynamicRaggedShape lengths={self.static_lengths()} num_row_partitions={self.num_row_partitions}>"
