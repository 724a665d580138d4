"""Control flow and functional ops (tf.cond, tf.while_loop, tf.map_fn, tf.scan, tf.TensorArray, tf.py_function...).

lockstep runs eagerly, so each is its Python loop or branch over lockstep's differentiable ops: gradients flow
through them as through TF's. Where eager TF and a traced tf.function differ, the checks are the traced ones
(structure of a loop's variables, shape_invariants, output dtypes), as lockstep's tf.function runs the Python as is.
"""
import numpy as _np

from . import _lockstep, _nest, dtypes as _dtypes, errors as _errors
from ._tensor import TensorShape

_ops = _lockstep.ops

__all__ = ["cond", "while_loop", "case", "switch_case", "map_fn", "vectorized_map", "foldl", "foldr", "scan",
           "TensorArray", "py_function", "numpy_function", "group", "tuple", "identity_n"]

builtin_tuple = tuple


def _strings():
    from .data import _structure

    return _structure.StringTensor


def _is_tensor(x):
    return isinstance(x, (_lockstep.Tensor, _lockstep.Variable, _strings()))


def _convert(value, dtype=None):
    from . import _core

    if isinstance(value, _lockstep.Variable):
        value = _ops.identity(value)  # a read, on the tape like any op on the variable
    return value if _is_tensor(value) and dtype is None else _core.convert_to_tensor(value, dtype=dtype)


def _truth(value, what):
    """A Python bool of a predicate: a Python value or a tensor of one element."""
    if not _is_tensor(value):
        return bool(value)
    a = _np.asarray(value.numpy())
    if a.size != 1:
        raise ValueError(f"{what} must be a scalar, got a tensor of shape {list(a.shape)}")
    return bool(a.reshape(()))


def _check_callable(fn, what):
    if not callable(fn):
        raise TypeError(f"'{what}' must be callable.")


# ---- branches ----

def cond(pred=None, true_fn=None, false_fn=None, name=None):
    """tf.cond: runs true_fn() or false_fn() as the predicate (a Python bool or a scalar tensor) says."""
    for fn, what in ((true_fn, "true_fn"), (false_fn, "false_fn")):
        if fn is None:
            raise TypeError(f"cond(): '{what}' argument required")
        _check_callable(fn, what)
    return true_fn() if _truth(pred, "tf.cond's pred") else false_fn()


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """tf.case: the fn of the first pair whose predicate (a boolean tensor) is true, else default()."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else pred_fn_pairs
    if not isinstance(pairs, (list, builtin_tuple)):
        raise TypeError(f"pred_fn_pairs must be a list of (pred, fn) pairs, got {type(pred_fn_pairs).__name__}")
    chosen = []
    for pair in pairs:
        if not isinstance(pair, (list, builtin_tuple)) or len(pair) != 2:
            raise TypeError(f"Each entry in pred_fn_pairs must be a 2-tuple (pred, fn), got {pair!r}")
        pred, fn = pair
        if not _is_tensor(pred):
            raise TypeError(f"pred must be a Tensor, got: {pred!r}")
        if pred.dtype != _dtypes.bool:
            raise TypeError(f"pred must be a Tensor of type bool, got {pred.dtype.name}")
        _check_callable(fn, f"fn for pred {pred!r}")
        if _truth(pred, "tf.case's pred"):
            chosen.append(fn)
    if default is not None:
        _check_callable(default, "default")
    if exclusive and len(chosen) > 1:
        raise _errors.InvalidArgumentError(f"tf.case with exclusive=True: {len(chosen)} conditions evaluated as "
                                           "True, at most one may")
    if chosen:
        return chosen[0]()
    if default is None:
        raise _errors.InvalidArgumentError("Input error: None of conditions evaluated as True: give tf.case a "
                                           "default")
    return default()


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """tf.switch_case: branch_fns[branch_index](); an index out of range runs default, else the last branch."""
    if not _is_tensor(branch_index):
        raise TypeError(f"'branch_index' must be a Tensor, got {type(branch_index)}")
    if not branch_index.dtype.is_integer:
        raise TypeError(f"'branch_index' must be an integer Tensor, got {branch_index.dtype!r}")
    if isinstance(branch_fns, dict):
        branch_fns = sorted(branch_fns.items())
    branch_fns = list(branch_fns)
    if not branch_fns:
        raise ValueError("branch_fns must not be empty")
    if all(isinstance(b, (list, builtin_tuple)) for b in branch_fns):
        keys = [k for k, _ in sorted(branch_fns, key=lambda b: b[0])]
        if keys != list(range(len(keys))):
            raise ValueError(f"branch indices (keys) must form a contiguous range 0..{len(keys) - 1}, got {keys}")
        branch_fns = [fn for _, fn in sorted(branch_fns, key=lambda b: b[0])]
    for i, fn in enumerate(branch_fns):
        _check_callable(fn, f"branch_fns[{i}]")
    index = int(_np.asarray(branch_index.numpy()).reshape(()))
    if 0 <= index < len(branch_fns):
        return branch_fns[index]()
    if default is not None:
        _check_callable(default, "default")
        return default()
    return branch_fns[-1]()


# ---- loops ----

def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,  # noqa: A002
               swap_memory=False, maximum_iterations=None, name=None):
    """tf.while_loop: `loop_vars = body(*loop_vars)` while cond(*loop_vars), at most maximum_iterations times.
    loop_vars is a list or tuple of nests (or one nest); the result has its structure."""
    _check_callable(cond, "cond")
    _check_callable(body, "body")
    single = not isinstance(loop_vars, (list, builtin_tuple))
    if not single and not loop_vars:
        raise ValueError("'loop_vars' must be provided.")
    values = [loop_vars] if single else loop_vars
    limit = None
    if maximum_iterations is not None:
        limit = _np.asarray(maximum_iterations.numpy() if _is_tensor(maximum_iterations) else maximum_iterations)
        if limit.ndim != 0:
            raise ValueError(f"'maximum_iterations' must be a scalar. Received shape: {list(limit.shape)}")
        limit = int(limit)
    invariants = None
    if shape_invariants is not None:
        invariants = [shape_invariants] if single else shape_invariants
        if not _same_structure(values, invariants, shapes_are_leaves=True):
            raise ValueError("shape_invariants must have the structure of loop_vars")
    count = 0
    while (limit is None or count < limit) and _truth(cond(*values), "tf.while_loop's cond result"):
        out = body(*values)
        if len(values) == 1 and not isinstance(out, (list, builtin_tuple)):
            out = [out]
        if not _same_structure(values, out):
            raise ValueError(f"The body of tf.while_loop returned {out!r}, which does not have the structure of "
                             f"loop_vars {values!r}; return one value per loop variable")
        if invariants is not None:
            _check_invariants(out, invariants)
        values, count = out, count + 1
    values = type(values)(_nest.map_structure(_loop_value, list(values)))
    return values[0] if single else values


def _loop_value(x):
    return x if isinstance(x, TensorArray) else _convert(x)


def _same_structure(a, b, shapes_are_leaves=False):
    if shapes_are_leaves and isinstance(b, TensorShape):
        return not isinstance(a, (list, builtin_tuple, dict))
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b) and all(
            _same_structure(a[k], b[k], shapes_are_leaves) for k in a)
    if isinstance(a, (list, builtin_tuple)) or isinstance(b, (list, builtin_tuple)):
        return (isinstance(a, (list, builtin_tuple)) and isinstance(b, (list, builtin_tuple)) and len(a) == len(b)
                and all(_same_structure(x, y, shapes_are_leaves) for x, y in zip(a, b)))
    return True


def _check_invariants(values, invariants):
    flat_v = _nest.flatten(values)
    flat_i = [TensorShape(s) if not isinstance(s, TensorShape) else s for s in _flatten_shapes(invariants)]
    for v, want in zip(flat_v, flat_i):
        shape = _convert(v).shape if not isinstance(v, TensorArray) else None
        if shape is None or want.rank is None:
            continue
        if len(shape) != len(want) or any(w is not None and w != d for w, d in zip(want, shape)):
            raise ValueError(f"tf.while_loop: a loop variable has shape {shape} after an iteration, which its "
                             f"shape_invariant {want} does not allow; use None for the dimensions that change")


def _flatten_shapes(invariants):
    if isinstance(invariants, TensorShape):
        return [invariants]
    if isinstance(invariants, dict):
        return [s for k in sorted(invariants) for s in _flatten_shapes(invariants[k])]
    if isinstance(invariants, (list, builtin_tuple)) and invariants and all(
            isinstance(d, (int, type(None))) for d in invariants):
        return [TensorShape(invariants)]  # a shape given as a list of dims
    if isinstance(invariants, (list, builtin_tuple)):
        return [s for item in invariants for s in _flatten_shapes(item)]
    return [invariants]


def _rows(elems, what):
    """The flat leaves of elems as tensors and their common first dimension."""
    flat = [_convert(e) for e in _nest.flatten(elems)]
    if not flat:
        raise ValueError(f"{what}: elems must hold at least one tensor")
    for t in flat:
        if len(t.shape) == 0:
            raise ValueError("Elements in elems must be 1+ dimensional Tensors, not scalars")
    n = flat[0].shape[0]
    for t in flat[1:]:
        if t.shape[0] != n:
            raise ValueError(f"{what}: the tensors of elems have first dimensions {n} and {t.shape[0]}; they must "
                             "agree (one row of each per call)")
    return flat, n


def _row(t, i):
    return _strings()(t._values[i]) if isinstance(t, _strings()) else t[i]


def _element(elems, flat, i):
    rows = [_row(t, i) for t in flat]
    return _nest.pack_sequence_as(elems, rows) if _nest.is_nested(elems) else rows[0]


def _stack(values, dtype, what):
    """One tensor of the per-row outputs `values` (converted to dtype), which must share a shape."""
    values = [_output(v, dtype, what) for v in values]
    shape = values[0].shape
    for v in values[1:]:
        if v.shape != shape:
            raise ValueError(f"Incompatible shape for value ({tuple(v.shape)}), expected ({tuple(shape)}): {what} "
                             "needs outputs of one shape")
    if isinstance(values[0], _strings()):
        return _strings()(_np.stack([v._values for v in values]))
    return _ops.stack(values, 0)


def _output(value, dtype, what):
    if isinstance(value, _lockstep.Variable):
        value = _ops.identity(value)
    if _is_tensor(value):
        if dtype is not None and value.dtype != dtype:
            raise _errors.InvalidArgumentError(f"{what}: an output has dtype {value.dtype.name} but "
                                               f"{dtype.name} is wanted; cast it or change fn_output_signature")
        return value
    return _convert(value, dtype)


def _signature_dtype(leaf):
    if type(leaf).__name__ in ("RaggedTensorSpec", "SparseTensorSpec"):
        raise NotImplementedError(f"tf.map_fn with fn_output_signature={leaf!r} is not implemented by lockstep "
                                  "(see docs/python.md)")
    return leaf.dtype if hasattr(leaf, "shape") and hasattr(leaf, "dtype") else _dtypes.as_dtype(leaf)


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False, infer_shape=True,
           name=None, fn_output_signature=None):
    """tf.map_fn: fn on each row (first dimension) of elems, a tensor or nest of them, the results stacked.
    Without fn_output_signature (or dtype) the outputs have elems' structure and dtypes, as in TF."""
    _check_callable(fn, "fn")
    flat, n = _rows(elems, "tf.map_fn")
    signature = fn_output_signature if fn_output_signature is not None else dtype
    if signature is None:
        signature = _nest.map_structure(lambda t: t.dtype, elems) if _nest.is_nested(elems) else flat[0].dtype
    flat_sig = _nest.flatten(signature)
    dtypes = [_signature_dtype(s) for s in flat_sig]
    outputs = []
    for i in range(n):
        out = fn(_element(elems, flat, i))
        if not _same_structure(signature, out) or len(_nest.flatten(out)) != len(flat_sig):
            raise ValueError(f"tf.map_fn: fn returned {out!r}, which does not have the structure of "
                             f"fn_output_signature {signature!r}; give fn_output_signature when fn's output differs "
                             "from elems in structure or dtype")
        outputs.append(_nest.flatten(out))
    if n == 0:
        stacked = [_empty(s, d) for s, d in zip(flat_sig, dtypes)]
    else:
        stacked = [_stack([o[j] for o in outputs], d, "tf.map_fn") for j, d in enumerate(dtypes)]
    return _nest.pack_sequence_as(signature, stacked) if _nest.is_nested(signature) else stacked[0]


def _empty(spec, dtype):
    shape = [0] + (list(spec.shape) if hasattr(spec, "shape") and spec.shape.rank is not None else [])
    if dtype is _dtypes.string:
        return _strings()(_np.empty(shape, dtype=object))
    return _ops.fill([0 if d is None else d for d in shape], 0, dtype._lockstep_dtype)


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """tf.vectorized_map: the values of tf.map_fn, its output structure fn's own (lockstep does not vectorize:
    fn runs per row, which is what TF's while-loop fallback does)."""
    _check_callable(fn, "fn")
    flat, n = _rows(elems, "tf.vectorized_map")
    outputs = [fn(_element(elems, flat, i)) for i in range(n)]
    if n == 0:
        raise ValueError("tf.vectorized_map over elems with 0 rows: lockstep finds fn's output by running it; use "
                         "tf.map_fn with fn_output_signature")
    first = outputs[0]
    flats = [_nest.flatten(o) for o in outputs]
    stacked = [_stack([f[j] for f in flats], None, "tf.vectorized_map") for j in range(len(flats[0]))]
    return _nest.pack_sequence_as(first, stacked) if _nest.is_nested(first) else stacked[0]


def _fold(fn, elems, initializer, order, what):
    _check_callable(fn, "fn")
    flat, n = _rows(elems, what)
    order = list(order(n))
    if initializer is None:
        if n == 0:
            raise _errors.OutOfRangeError(f"{what}: elems has no rows and no initializer was given: tried to read "
                                          "from index 0 but array size is: 0")
        acc, order = _element(elems, flat, order[0]), order[1:]
    else:
        acc = initializer
    for i in order:
        acc = fn(acc, _element(elems, flat, i))
    return _nest.map_structure(_convert, acc) if _nest.is_nested(acc) else _convert(acc)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """tf.foldl: acc = fn(acc, row) over the rows of elems, first to last; acc starts as initializer or row 0."""
    return _fold(fn, elems, initializer, range, "tf.foldl")


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """tf.foldr: tf.foldl from the last row to the first."""
    return _fold(fn, elems, initializer, lambda n: range(n - 1, -1, -1), "tf.foldr")


def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, infer_shape=True,
         reverse=False, name=None):
    """tf.scan: every accumulator of a fold, stacked in the rows' order (reverse runs from the last row)."""
    _check_callable(fn, "fn")
    flat, n = _rows(elems, "tf.scan")
    order = list(range(n - 1, -1, -1) if reverse else range(n))
    results = {}
    if initializer is None:
        if n == 0:
            raise _errors.OutOfRangeError("tf.scan: elems has no rows and no initializer was given")
        acc = _element(elems, flat, order[0])
        results[order[0]], order = acc, order[1:]
    else:
        acc = initializer
    for i in order:
        acc = fn(acc, _element(elems, flat, i))
        if not _same_structure(acc if initializer is None else initializer, acc):
            raise ValueError(f"tf.scan: fn returned {acc!r}, which does not have the structure of the accumulator")
        results[i] = acc
    like = initializer if initializer is not None else acc
    flats = [_nest.flatten(results[i]) for i in sorted(results)]
    if not flats:
        stacked = [_empty(_convert(x), _convert(x).dtype) for x in _nest.flatten(like)]
    else:
        stacked = [_stack([f[j] for f in flats], None, "tf.scan") for j in range(len(flats[0]))]
    return _nest.pack_sequence_as(like, stacked) if _nest.is_nested(like) else stacked[0]


# ---- tf.TensorArray ----

class TensorArray:
    """tf.TensorArray as eager TF has it: a list of tensors of one dtype and (once written) one shape. Writes
    change the array and return it, so `ta = ta.write(i, x)` works as in TF; stack/gather/concat use lockstep's
    ops, so gradients flow through it."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None, colocate_with_first_write_call=True,
                 name=None):
        if size is None:
            raise ValueError("Size must be declared for TensorArrays when eager execution is enabled.")
        size = int(_np.asarray(size.numpy() if _is_tensor(size) else size))
        if size < 0:
            raise ValueError(f"TensorArray size must be 0 or more, got {size}")
        self._dtype = _dtypes.as_dtype(dtype)
        self._dynamic = bool(dynamic_size)
        self._clear = True if clear_after_read is None else bool(clear_after_read)
        self._infer = bool(infer_shape)
        self._shape = TensorShape(element_shape)
        self._items = [None] * size
        self._cleared = set()

    dtype = property(lambda self: self._dtype)
    dynamic_size = property(lambda self: self._dynamic)
    element_shape = property(lambda self: self._shape)
    handle = property(lambda self: self)
    flow = property(lambda self: _convert(0.0))

    def _index(self, index, reading):
        i = int(_np.asarray(index.numpy() if _is_tensor(index) else index))
        if i < 0:
            raise _errors.OutOfRangeError(f"{'Reading from' if reading else 'Writing to'} negative indices (index "
                                          f"{i}) is not allowed.")
        if i >= len(self._items):
            if reading:
                raise _errors.OutOfRangeError(f"Tried to read from index {i} but array size is: {len(self._items)}")
            if not self._dynamic:
                raise _errors.OutOfRangeError(f"Tried to write to index {i} but array is not resizeable and size "
                                              f"is: {len(self._items)}; create it with dynamic_size=True")
            self._items.extend([None] * (i + 1 - len(self._items)))
        return i

    def write(self, index, value, name=None):
        i = self._index(index, reading=False)
        value = _output(value, self._dtype, "TensorArray.write")
        if value.dtype != self._dtype:
            raise _errors.InvalidArgumentError(f"TensorArray dtype is {self._dtype.name} but Op is trying to write "
                                               f"dtype {value.dtype.name}")
        if self._shape.rank is not None:
            if len(self._shape) != len(value.shape) or any(
                    a is not None and a != b for a, b in zip(self._shape, value.shape)):
                raise ValueError(f"Incompatible shape for value ({tuple(value.shape)}), expected "
                                 f"({tuple(self._shape)})")
        if self._infer or self._shape.rank is None:
            self._shape = TensorShape(value.shape) if self._infer else self._shape
        self._items[i] = value
        self._cleared.discard(i)
        return self

    def read(self, index, name=None):
        i = self._index(index, reading=True)
        if i in self._cleared:
            raise _errors.InvalidArgumentError(f"Could not read index {i} twice because it was cleared after a "
                                               "previous read (perhaps try setting clear_after_read = false?)")
        value = self._items[i] if self._items[i] is not None else self._zeros(f"read index {i}")
        if self._clear:
            self._cleared.add(i)
            self._items[i] = None
        return value

    def _zeros(self, what):
        """An element never written: zeros of the element shape, which must be known."""
        if not self._shape.is_fully_defined():
            raise ValueError(f"TensorArray cannot {what}: it was never written and the element shape "
                             f"{self._shape} is not fully known; write it or give element_shape")
        if self._dtype is _dtypes.string:
            return _strings()(_np.full(list(self._shape), b"", dtype=object))
        return _ops.fill(list(self._shape), 0, self._dtype._lockstep_dtype)

    def _all(self, indices):
        return [self._items[i] if self._items[i] is not None else self._zeros(f"stack index {i}") for i in indices]

    def stack(self, name=None):
        return self.gather(range(len(self._items)))

    def gather(self, indices, name=None):
        indices = [self._index(i, reading=True) for i in _np.asarray(
            indices.numpy() if _is_tensor(indices) else list(indices), dtype=_np.int64).reshape(-1)]
        if not indices:
            return _empty(_SpecLike(self._shape) if self._shape.rank is not None else None, self._dtype)
        return _stack(self._all(indices), self._dtype, "TensorArray.stack")

    def unstack(self, value, name=None):
        value = _output(value, self._dtype, "TensorArray.unstack")
        if len(value.shape) == 0:
            raise ValueError("TensorArray.unstack needs a tensor of rank 1 or more")
        n = value.shape[0]
        if n > len(self._items) and not self._dynamic:
            raise ValueError(f"Cannot unstack {n} tensors into a TensorArray of static size {len(self._items)}")
        for i in range(n):
            self.write(i, _row(value, i))
        return self

    def scatter(self, indices, value, name=None):
        value = _output(value, self._dtype, "TensorArray.scatter")
        indices = _np.asarray(indices.numpy() if _is_tensor(indices) else indices, dtype=_np.int64).reshape(-1)
        if len(value.shape) == 0 or value.shape[0] != len(indices):
            raise ValueError(f"TensorArray.scatter: {len(indices)} indices for a value of shape {value.shape}; "
                             "give one row per index")
        for j, i in enumerate(indices):
            self.write(int(i), _row(value, j))
        return self

    def concat(self, name=None):
        parts = self._all(range(len(self._items)))
        if not parts:
            return _empty(None, self._dtype)
        if isinstance(parts[0], _strings()):
            return _strings()(_np.concatenate([p._values for p in parts]))
        return _ops.concat(parts, 0)

    def split(self, value, lengths, name=None):
        value = _output(value, self._dtype, "TensorArray.split")
        lengths = [int(n) for n in _np.asarray(lengths.numpy() if _is_tensor(lengths) else lengths).reshape(-1)]
        if sum(lengths) != (value.shape[0] if len(value.shape) else -1):
            raise _errors.InvalidArgumentError(f"TensorArray.split: lengths {lengths} do not add up to the value's "
                                               f"first dimension (shape {value.shape})")
        if len(lengths) > len(self._items) and not self._dynamic:
            raise ValueError(f"Cannot split into {len(lengths)} tensors a TensorArray of static size "
                             f"{len(self._items)}")
        self._infer = False  # pieces may differ in their first dimension
        start = 0
        for i, n in enumerate(lengths):
            from . import _core

            piece = (_strings()(value._values[start:start + n]) if isinstance(value, _strings())
                     else _core._slice_axis(value, 0, start, n))
            self.write(i, piece)
            start += n
        return self

    def size(self, name=None):
        return _convert(_np.int32(len(self._items)))

    def identity(self):
        return self

    def close(self, name=None):
        self._items = [None] * len(self._items)

    def mark_used(self):
        pass

    def __repr__(self):
        return f"<TensorArray dtype={self._dtype.name} size={len(self._items)} element_shape={self._shape}>"


class _SpecLike:
    """The element shape of an empty TensorArray, in the form _empty takes."""

    def __init__(self, dims):
        self.shape = TensorShape(dims)


# ---- Python functions as ops ----

_ERRORS = ((StopIteration, _errors.OutOfRangeError), (IndexError, _errors.OutOfRangeError),
           (TypeError, _errors.InvalidArgumentError), (ValueError, _errors.InvalidArgumentError),
           (MemoryError, _errors.ResourceExhaustedError))


def _call(func, args, what):
    """func(*args), a Python error in it raised as the tf.errors class TF's py_func op turns it into."""
    try:
        return func(*args)
    except (_errors.OpError, NotImplementedError):
        raise
    except Exception as e:  # noqa: BLE001 (every Python error becomes an op error, as in TF)
        cls = next((c for base, c in _ERRORS if isinstance(e, base)), _errors.UnknownError)
        raise cls(f"{what}: {type(e).__name__}: {e}") from e


def _outputs(result, Tout, convert, what):
    """The results of func in Tout's structure, each converted by convert(value, dtype)."""
    flat_tout = _nest.flatten(Tout)
    if _nest.is_nested(Tout):
        flat = [] if result is None else (_nest.flatten(result) if _nest.is_nested(result) else [result])
        if len(flat) != len(flat_tout) or (_nest.is_nested(result) and not _same_structure(Tout, result)):
            raise _errors.InvalidArgumentError(f"{what} returns {len(flat)} values, but expects to see "
                                               f"{len(flat_tout)} values (the structure of Tout {Tout!r})")
    else:
        if result is None:
            raise _errors.InvalidArgumentError(f"{what} returns 0 values, but expects to see 1 values")
        flat = [result]
    out = [convert(v, _signature_dtype(t), what, i) for i, (v, t) in enumerate(zip(flat, flat_tout))]
    return _nest.pack_sequence_as(Tout, out) if _nest.is_nested(Tout) else out[0]


def _py_output(value, dtype, what, i):
    if _is_tensor(value) and not isinstance(value, _lockstep.Variable) and value.dtype != dtype:
        raise _errors.InvalidArgumentError(f"{what}: value {i} is a {value.dtype.name} tensor but Tout says "
                                           f"{dtype.name}; cast it in func or change Tout")
    return _output(value, dtype, what)


def py_function(func=None, inp=None, Tout=None, name=None):  # noqa: N803 (TF's argument name)
    """tf.py_function: func(*inp) on tensors, its results converted to Tout (a dtype or TensorSpec, a nest of
    them, or None). It is differentiable where func uses lockstep's ops, as TF's eager py_function is."""
    if func is None:  # @tf.py_function(Tout=...)
        return lambda f: (lambda *args: py_function(f, list(args), Tout, name))
    _check_callable(func, "func")
    inp = [] if inp is None else inp
    args = inp if isinstance(inp, (list, builtin_tuple)) else list(inp)
    args = [_nest.map_structure(_convert, a) if _nest.is_nested(a) else _convert(a) for a in args]
    result = _call(func, args, f"tf.py_function {getattr(func, '__name__', 'func')}")
    if Tout is None:
        if result is not None:
            raise _errors.InvalidArgumentError("tf.py_function with Tout=None: func returned a value; give Tout "
                                               "its dtype")
        return None
    return _outputs(result, Tout, _py_output, f"tf.py_function {getattr(func, '__name__', 'func')}")


def _numpy_input(x):
    t = _convert(x)
    if isinstance(t, _strings()):
        return _np.asarray(t._values, dtype=object)
    return _np.asarray(t.numpy())


def _numpy_output(value, dtype, what, i):
    """As a traced TF numpy_function: an array must have Tout's dtype; Python numbers are made of it."""
    if _is_tensor(value):
        return _py_output(value, dtype, what, i)
    if isinstance(value, (_np.ndarray, _np.generic)):
        if dtype is _dtypes.string and value.dtype.kind in "OSU":
            return _convert(value.tolist() if value.ndim else value.item(), dtype)
        if _np.dtype(value.dtype) != _np.dtype(dtype.as_numpy_dtype):
            raise _errors.InvalidArgumentError(f"{what}: value {i} is a NumPy {value.dtype} array but Tout says "
                                               f"{dtype.name}; use .astype in func or change Tout")
        return _convert(_np.array(value))  # a copy: func may change its array later
    if dtype is _dtypes.string:
        return _convert(value, dtype)
    return _convert(_np.asarray(value, dtype=dtype.as_numpy_dtype))


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):  # noqa: N803
    """tf.numpy_function: func(*arrays) on the NumPy values of inp, its results (of Tout's dtypes) as tensors.
    No gradient flows through it, as in TF."""
    if func is None:
        return lambda f: (lambda *args: numpy_function(f, list(args), Tout, stateful, name))
    _check_callable(func, "func")
    args = [_numpy_input(a) for a in (inp or [])]
    what = f"tf.numpy_function {getattr(func, '__name__', 'func')}"
    result = _call(func, args, what)
    if isinstance(Tout, (list, builtin_tuple)) and len(Tout) == 1:
        Tout = Tout[0]  # noqa: N806 (TF returns one tensor for a one-element Tout)
        if isinstance(result, (list, builtin_tuple)) and len(result) == 1:
            result = result[0]
    if Tout is None or (isinstance(Tout, (list, builtin_tuple)) and not Tout):
        return None
    return _outputs(result, Tout, _numpy_output, what)


# ---- grouping ----

def group(*inputs, **kwargs):
    """tf.group: ops run as they are called here, so there is nothing left to wait for; None, as eager TF."""
    kwargs.pop("name", None)
    if kwargs:
        raise ValueError(f"Unknown keyword arguments: {sorted(kwargs)}")
    return None


def tuple(tensors, control_inputs=None, name=None):  # noqa: A001
    """tf.tuple: the tensors, each already computed (ops run eagerly), as a list."""
    if control_inputs is not None and not isinstance(control_inputs, (list, builtin_tuple)) and not _is_tensor(
            control_inputs):
        raise TypeError("control_inputs must be a list or tuple")
    return list(tensors) if isinstance(tensors, (list, builtin_tuple)) else tensors


def identity_n(input, name=None):  # noqa: A002
    """tf.identity_n: an identity of each tensor of the list."""
    return [t if isinstance(t, _strings()) else _ops.identity(_convert(t)) for t in list(input)]
