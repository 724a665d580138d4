"""tf.ragged: building ragged tensors from Python lists and ranges, and the ops over them (lockstep/_ragged.py)."""
import builtins as _builtins

import numpy as _np

from . import _unimplemented, dtypes as _dtypes
from ._ragged import (RaggedTensor, RowPartition, _check_row_splits_dtype, _concat_rows, _partition_of,
                      _same_splits, _take_rows)
from ._sparse import values_of
from .errors import InvalidArgumentError

__all__ = ["constant", "range", "map_flat_values", "stack", "boolean_mask", "row_splits_to_segment_ids",
           "segment_ids_to_row_splits", "RaggedTensor"]


def _depths(value, depth, found):
    """The nesting depths at which `value` holds scalars (and, for an empty list, where one would be)."""
    if isinstance(value, (list, tuple)):
        if not value:
            found.setdefault("empty", set()).add(depth + 1)
        for v in value:
            _depths(v, depth + 1, found)
    else:
        found.setdefault("scalar", set()).add(depth)


def constant(pylist, dtype=None, ragged_rank=None, inner_shape=None, name=None, row_splits_dtype=_dtypes.int64):
    """A RaggedTensor of nested Python lists; ragged_rank defaults to the depth of the lists less one (less the
    inner_shape's rank), and a list with no nesting is a plain tensor."""
    _check_row_splits_dtype(row_splits_dtype)
    if isinstance(pylist, RaggedTensor):
        raise TypeError("tf.ragged.constant takes nested Python lists, not a RaggedTensor")
    found = {}
    _depths(pylist, 0, found)
    scalar = found.get("scalar", set())
    if len(scalar) > 1:
        raise ValueError("all scalar values must have the same nesting depth")
    depth = next(iter(scalar)) if scalar else max(found.get("empty", {0}))
    if scalar and any(d > depth for d in found.get("empty", ())):
        raise ValueError("all scalar values must have the same nesting depth")
    inner_rank = 0 if inner_shape is None else len(tuple(inner_shape))
    if ragged_rank is None:
        ragged_rank = max(depth - 1 - inner_rank, 0)
    ragged_rank = int(ragged_rank)
    if not 0 <= ragged_rank < max(depth, 1):
        raise ValueError(f"tf.ragged.constant: ragged_rank {ragged_rank} must be less than the depth of the lists "
                         f"({depth})")
    from . import _core

    if ragged_rank == 0:
        return _core.constant(pylist, dtype=dtype)
    items, splits = list(pylist), []
    for _ in _builtins.range(ragged_rank):
        lengths = [len(x) if isinstance(x, (list, tuple)) else -1 for x in items]
        if min(lengths, default=0) < 0:
            raise ValueError("all scalar values must have the same nesting depth")
        splits.append(_np.concatenate([[0], _np.cumsum(lengths)]).astype(_np.int64))
        items = [y for x in items for y in x]
    flat = _flat_values(items, dtype, inner_shape, depth - ragged_rank - 1)
    result = flat
    for s in reversed(splits):
        result = RaggedTensor._from(result, _partition_of(s))
    return result


def _flat_values(items, dtype, inner_shape, inner_rank):
    from . import _core

    if not items:
        shape = [0] + (list(inner_shape) if inner_shape is not None else [0] * inner_rank)
        return _core.constant(_np.zeros(shape, (dtype and _dtypes.as_dtype(dtype).as_numpy_dtype) or _np.float32),
                              dtype=dtype)
    try:
        shapes = {_np.shape(x) for x in items}
    except ValueError:
        shapes = {None, ()}
    if len(shapes) > 1:
        raise ValueError("tf.ragged.constant: the inner values have different shapes; every list below ragged_rank "
                         "must have the same length (raise ragged_rank to make those lists ragged)")
    if inner_shape is not None and tuple(next(iter(shapes))) != tuple(inner_shape):
        raise ValueError(f"tf.ragged.constant: inner values have shape {next(iter(shapes))}, not inner_shape "
                         f"{tuple(inner_shape)}")
    return _core.constant(items, dtype=dtype)


def range(starts, limits=None, deltas=1, dtype=None, name=None, row_splits_dtype=_dtypes.int64):  # noqa: A001
    """Row i is tf.range(starts[i], limits[i], deltas[i]); scalars broadcast."""
    _check_row_splits_dtype(row_splits_dtype)
    if limits is None:
        starts, limits = 0, starts
    from . import _core

    args = [_np.asarray(a.numpy() if hasattr(a, "numpy") else a) for a in (starts, limits, deltas)]
    if dtype is None:
        dtype = _dtypes.float32 if any(a.dtype.kind == "f" for a in args) else (
            _dtypes.int64 if any(a.dtype == _np.int64 and hasattr(x, "numpy")
                                 for a, x in zip(args, (starts, limits, deltas))) else _dtypes.int32)
    for a in args:
        if a.ndim > 1:
            raise ValueError(f"tf.ragged.range: starts, limits and deltas must be scalars or vectors, got shape "
                             f"{list(a.shape)}")
    sizes = {a.size for a in args if a.ndim == 1}
    try:
        if len(sizes) > 1:
            raise ValueError
        starts, limits, deltas = _np.broadcast_arrays(*args)
    except ValueError:
        raise InvalidArgumentError(f"tf.ragged.range: starts, limits and deltas have sizes {[a.size for a in args]}; "
                                   "vectors "
                         "must have the same size") from None
    if _np.any(deltas == 0):
        raise InvalidArgumentError("tf.ragged.range: Requires delta != 0")
    np_dtype = _dtypes.as_dtype(dtype).as_numpy_dtype
    rows = [_np.arange(s, e, d, dtype=_np.float64)
            for s, e, d in zip(starts.reshape(-1), limits.reshape(-1), deltas.reshape(-1))]
    flat = _np.concatenate(rows).astype(np_dtype) if rows else _np.zeros(0, np_dtype)
    lengths = [len(r) for r in rows]
    return RaggedTensor.from_row_lengths(_core.constant(flat, dtype=dtype), lengths)


def map_flat_values(op, *args, **kwargs):
    """op applied to the flat values of the RaggedTensor arguments, which must all have the same row splits."""
    ragged = [a for a in list(args) + list(kwargs.values()) if isinstance(a, RaggedTensor)]
    if not ragged:
        return op(*args, **kwargs)
    first = ragged[0]
    for r in ragged[1:]:
        if not _same_splits(first, r):
            raise ValueError("tf.ragged.map_flat_values: the RaggedTensor arguments have different row splits; "
                             "they must partition their values the same way")
    unwrap = lambda a: a.flat_values if isinstance(a, RaggedTensor) else a  # noqa: E731
    out = op(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
    n = first.flat_values.shape[0]
    if out.shape[0] != n:
        raise ValueError(f"tf.ragged.map_flat_values: op returned {out.shape[0]} rows of values where the ragged "
                         f"arguments have {n}; it must keep the outer dimension")
    return first.with_flat_values(out)


def _as_ragged(value, ragged_rank):
    if isinstance(value, RaggedTensor):
        while value.ragged_rank < ragged_rank:
            value = value.with_values(RaggedTensor.from_tensor(value.flat_values, ragged_rank=1))
        return value
    t = values_of(value)
    if ragged_rank == 0:
        return t
    return RaggedTensor.from_tensor(t, ragged_rank=ragged_rank)


def stack(values, axis=0, name=None):
    """The tensors (ragged or not, of any row lengths) stacked along a new axis 0 or 1."""
    values = list(values)
    if not values:
        raise ValueError("tf.ragged.stack needs at least one tensor")
    ranks = {len(v.shape) for v in values}
    if len(ranks) > 1:
        raise ValueError(f"tf.ragged.stack: the tensors have ranks {sorted(ranks)}; they must have the same rank")
    axis = int(axis)
    rank = ranks.pop()
    axis = axis + rank + 1 if axis < 0 else axis
    depth = max((v.ragged_rank if isinstance(v, RaggedTensor) else 0) for v in values)
    if axis == 0:
        parts = [_as_ragged(v, min(depth, rank - 1)) for v in values]
        rows = [_nrows(p) for p in parts]
        return RaggedTensor.from_row_lengths(_concat_rows(parts), rows)
    if axis == 1:
        parts = [_as_ragged(v, min(depth, rank - 1)) if rank > 1 else values_of(v) for v in values]
        n = {_nrows(p) for p in parts}
        if len(n) > 1:
            raise ValueError(f"tf.ragged.stack along axis 1 needs the same number of rows in each tensor, got "
                             f"{sorted(n)}")
        n, k = n.pop(), len(parts)
        order = (_np.arange(k)[None, :] * n + _np.arange(n)[:, None]).reshape(-1)
        interleaved = _take_rows(_concat_rows(parts), order)
        return RaggedTensor._from(interleaved, RowPartition.from_row_lengths(_np.full(n, k)))
    raise NotImplementedError(f"tf.ragged.stack with axis={axis} is not implemented by lockstep (see docs/python.md)")


def _nrows(v):
    return v._nrows_static if isinstance(v, RaggedTensor) else v.shape[0]


def boolean_mask(data, mask, name=None):
    """The elements of data where mask is True; mask's shape is a prefix of data's, and the masked dimension
    (the last of mask's) becomes ragged."""
    mask_rank = len(mask.shape) if hasattr(mask, "shape") else _np.ndim(mask)
    if mask_rank == 0:
        raise ValueError("tf.ragged.boolean_mask: mask must have rank >= 1")
    if not isinstance(mask, RaggedTensor):
        mask = values_of(mask)
    if mask.dtype != _dtypes.bool:
        raise TypeError(f"tf.ragged.boolean_mask: mask must be tf.bool, got {mask.dtype.name}")
    if mask_rank == 1:
        keep = _np.flatnonzero(mask.numpy())
        if _nrows(data if isinstance(data, RaggedTensor) else values_of(data)) != len(mask.numpy()):
            raise ValueError(f"tf.ragged.boolean_mask: mask has {len(mask.numpy())} entries but data has "
                             f"{_nrows(data if isinstance(data, RaggedTensor) else values_of(data))} rows")
        return _take_rows(data if isinstance(data, RaggedTensor) else values_of(data), keep)
    if not isinstance(data, RaggedTensor) or data.ragged_rank < mask_rank - 1:
        data = _as_ragged(data, mask_rank - 1)
    mask = _as_ragged(mask, mask_rank - 1)
    return _masked(data, mask)


def _masked(data, mask):
    """data and mask ragged to the level above the masked dimension, with the same splits there."""
    if not isinstance(data, RaggedTensor) or not isinstance(mask, RaggedTensor):
        raise ValueError("tf.ragged.boolean_mask: mask and data have different ragged structure")
    if len(mask._partition._splits) != len(data._partition._splits) or _np.any(
            mask._partition._splits != data._partition._splits):
        raise InvalidArgumentError("tf.ragged.boolean_mask: mask's row lengths differ from data's; mask must have "
                                   "the shape of "
                         "a prefix of data's dimensions")
    if isinstance(mask._values, RaggedTensor):
        return RaggedTensor._from(_masked(data._values, mask._values), data._partition)
    keep = mask._values.numpy()
    if len(keep) != _nrows(data._values):
        raise ValueError("tf.ragged.boolean_mask: mask's shape is not a prefix of data's")
    ids = data._partition._rowids()
    counts = _np.bincount(ids[keep], minlength=data._nrows_static) if keep.any() else _np.zeros(
        data._nrows_static, _np.int64)
    return RaggedTensor._from(_take_rows(data._values, _np.flatnonzero(keep)), RowPartition.from_row_lengths(counts))


def row_splits_to_segment_ids(splits, name=None, out_type=None):
    return RowPartition.from_row_splits(splits).value_rowids()


def segment_ids_to_row_splits(segment_ids, num_segments=None, out_type=None, name=None):
    return RowPartition.from_value_rowids(segment_ids, num_segments).row_splits()


_unimplemented.install(globals(), "tf.ragged")
