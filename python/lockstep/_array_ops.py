"""Top-level tf.* ops beyond _core's: custom_gradient, einsum, scatter/gather by index, padding and reordering.
Most run their forward in NumPy and record a backward of lockstep ops, so gradients (and gradients of those) work."""
import builtins as _builtins
import functools as _functools
import inspect as _inspect

import numpy as _np

from . import _lockstep, _nest, dtypes as _dtypes, math as _math
from ._tensor import Tensor, TensorShape
from ._variable import Variable

_ops = _lockstep.ops
_convert = _ops.convert_to_tensor
_invalid, _numpy_op, _unbroadcast = _math._invalid, _math._numpy_op, _math._unbroadcast

__all__ = ["custom_gradient", "einsum", "eye", "cumsum", "tensor_scatter_nd_add", "tensor_scatter_nd_update",
           "tensor_scatter_nd_sub", "tensor_scatter_nd_min", "tensor_scatter_nd_max", "scatter_nd", "gather_nd",
           "gather", "pad", "roll", "repeat", "meshgrid", "round", "saturate_cast", "boolean_mask", "unique",
           "unique_with_counts", "searchsorted", "histogram_fixed_width", "norm", "truncatediv", "truncatemod", "sin",
           "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "reduce_logsumexp",
           "floor", "tensordot", "realdiv"]

(sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, asinh, acosh, atanh, cumsum, reduce_logsumexp, truncatediv,
 truncatemod, round, floor) = (
    _math.sin, _math.cos, _math.tan, _math.asin, _math.acos, _math.atan, _math.atan2, _math.sinh, _math.cosh,
    _math.asinh, _math.acosh, _math.atanh, _math.cumsum, _math.reduce_logsumexp, _math._truncatediv,
    _math._truncatemod, _math.round, _math.floor)
realdiv = _math.divide


# ---- tf.custom_gradient ----

def _variables_near(f, args, kwargs):
    """The trainable variables f may read: those among its arguments, its closure, the globals it names and, for
    a method, its object's. (TF watches the reads; lockstep's tapes do not list them.)"""
    found = []

    def add(value):
        if isinstance(value, Variable):
            if value.trainable and not any(value is v for v in found):
                found.append(value)
        elif hasattr(value, "trainable_variables") and not isinstance(value, type):
            for v in value.trainable_variables:
                add(v)

    for value in _nest.flatten((list(args), dict(kwargs))):
        add(value)
    target = getattr(f, "__func__", f)
    if getattr(f, "__self__", None) is not None:
        add(f.__self__)
    for cell in getattr(target, "__closure__", None) or ():
        try:
            add(cell.cell_contents)
        except ValueError:  # an empty cell
            pass
    code = getattr(target, "__code__", None)
    for name in (code.co_names if code else ()):
        if name in getattr(target, "__globals__", {}):
            add(target.__globals__[name])
    return found


def _takes_variables(grad_fn):
    try:
        parameters = _inspect.signature(grad_fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "variables" or p.kind is p.VAR_KEYWORD for p in parameters)


def _flat_gradients(grads, count, what):
    flat = [] if grads is None else _nest.flatten(grads if isinstance(grads, (list, tuple)) else [grads])
    if len(flat) != count:
        raise ValueError(f"custom_gradient's grad_fn returned {len(flat)} gradients for {count} {what}: return one "
                         "(or None) for each")
    return [None if g is None else _convert(g) for g in flat]


def custom_gradient(f=None):
    """tf.custom_gradient: f(*args) returns (y, grad_fn); grad_fn(*upstream) returns the gradients of f's tensor
    arguments (and, with a `variables` keyword, (those, the variables' gradients)). y may be a nested structure of
    tensors of one dtype."""
    if f is None:
        return custom_gradient

    @_functools.wraps(f)
    def call(*args, **kwargs):
        result, grad_fn = f(*args, **kwargs)
        outputs = [_convert(y) for y in _nest.flatten(result)]
        inputs = [_convert(a) for a in _nest.flatten(list(args)) if isinstance(a, (Tensor, Variable, _np.ndarray))
                  or (isinstance(a, (int, float)) and not isinstance(a, bool))]
        variables = _variables_near(f, args, kwargs) if _takes_variables(grad_fn) else []
        if not outputs:
            return result
        dtype = outputs[0].dtype
        if any(y.dtype != dtype for y in outputs):
            raise NotImplementedError("tf.custom_gradient with outputs of several dtypes is not implemented by "
                                      "lockstep (see docs/python.md)")
        shapes = [y._shape_tuple for y in outputs]
        sizes = [int(_np.prod(s, dtype=_np.int64)) for s in shapes]
        # Several outputs travel as one recorded tensor, so grad_fn sees all their upstream gradients at once.
        packed = (_ops.stop_gradient(outputs[0]) if len(outputs) == 1
                  else _ops.stop_gradient(_ops.concat([_ops.reshape(y, [-1]) for y in outputs], 0)))

        def backward(dy):
            if len(outputs) == 1:
                upstream = [dy]
            else:
                at = _np.cumsum([0] + sizes)
                upstream = [_ops.reshape(_ops.slice(dy, [int(at[i])], [sizes[i]]), shapes[i])
                            for i in _builtins.range(len(outputs))]
            if variables:
                grads = grad_fn(*upstream, variables=variables)
                if not isinstance(grads, (list, tuple)) or len(grads) != 2:
                    raise ValueError("custom_gradient's grad_fn, given variables=, must return (gradients of the "
                                     "inputs, gradients of the variables)")
                return (_flat_gradients(grads[0], len(inputs), "inputs")
                        + _flat_gradients(grads[1], len(variables), "variables"))
            return _flat_gradients(grad_fn(*upstream), len(inputs), "inputs")

        _ops.record_gradient(inputs + [v.value() for v in variables], packed, backward)
        if len(outputs) == 1:
            return _nest.pack_sequence_as(result, [packed])
        at = _np.cumsum([0] + sizes)
        pieces = [_ops.reshape(_ops.slice(packed, [int(at[i])], [sizes[i]]), shapes[i])
                  for i in _builtins.range(len(outputs))]
        return _nest.pack_sequence_as(result, pieces)

    return call


# ---- einsum ----

def _einsum_parse(equation, shapes):
    """The equation with '...' spelled out as letters, as (input subscripts, output subscripts)."""
    equation = equation.replace(" ", "")
    lhs, arrow, out = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum equation {equation!r} names {len(terms)} operands, got {len(shapes)}")
    used = set(equation) - set(".,->")
    spare = iter(c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used)
    longest = _builtins.max([len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t] or [0])
    ellipsis = "".join(next(spare) for _ in _builtins.range(longest))
    spelled = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            n = len(s) - (len(t) - 3)
            t = t.replace("...", ellipsis[longest - n:])
        if len(t) != len(s):
            raise ValueError(f"einsum subscripts {t!r} do not match an operand of rank {len(s)}")
        spelled.append(t)
    if not arrow:
        counts = {c: "".join(spelled).count(c) for c in set("".join(spelled))}
        out = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ellipsis))
    else:
        out = out.replace("...", ellipsis)
    return spelled, out


def einsum(equation, *inputs, **kwargs):
    """tf.einsum: the forward is NumPy's; each operand's gradient is an einsum of the upstream gradient with the
    other operands."""
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"tf.einsum got unexpected arguments {sorted(kwargs)}")
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    xs = [_convert(x) for x in inputs]
    if any(x.dtype != xs[0].dtype for x in xs):
        raise _invalid(f"tf.einsum needs operands of one dtype, got {[x.dtype.name for x in xs]}: cast them")
    terms, out = _einsum_parse(equation, [x._shape_tuple for x in xs])
    sizes = {}
    for t, x in zip(terms, xs):
        for c, d in zip(t, x._shape_tuple):
            if sizes.setdefault(c, d) != d and d != 1 and sizes[c] != 1:
                raise _invalid(f"tf.einsum: index {c!r} of {equation!r} is {sizes[c]} in one operand and {d} in "
                               "another")
            sizes[c] = _builtins.max(sizes[c], d)
    spec = ",".join(terms) + "->" + out

    def backward(dy, y, *xs):
        grads = []
        for i, (t, x) in enumerate(zip(terms, xs)):
            if len(set(t)) != len(t):
                raise NotImplementedError("the gradient of tf.einsum with an index repeated in one operand is not "
                                          "implemented by lockstep (see docs/python.md)")
            others = [(terms[j], xs[j]) for j in _builtins.range(len(xs)) if j != i]
            known = set(out).union(*[set(s) for s, _ in others])
            kept = "".join(c for c in t if c in known)
            g = einsum(",".join([out] + [s for s, _ in others]) + "->" + kept, dy, *[o for _, o in others])
            # an index summed in this operand alone: its gradient is the same all along it
            g = _ops.reshape(g, [sizes[c] if c in known else 1 for c in t])
            g = _unbroadcast(_ops.broadcast_to(g, [sizes[c] for c in t]), x._shape_tuple)
            grads.append(g)
        return grads

    return _numpy_op(lambda *a: _np.einsum(spec, *a), xs, backward if xs[0].dtype.is_floating else None)


def tensordot(a, b, axes, name=None):
    a, b = _convert(a), _convert(b)
    ra, rb = len(a._shape_tuple), len(b._shape_tuple)
    if isinstance(axes, int) or _np.ndim(axes) == 0:
        n = int(axes)
        axes = [list(_builtins.range(ra - n, ra)), list(_builtins.range(n))]
    axes_a, axes_b = [[int(v) % r for v in _np.ravel(ax)] for ax, r in zip(axes, (ra, rb))]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    sa = [next(letters) for _ in _builtins.range(ra)]
    sb = [next(letters) for _ in _builtins.range(rb)]
    for i, j in zip(axes_a, axes_b):
        sb[j] = sa[i]
    out = [c for k, c in enumerate(sa) if k not in axes_a] + [c for k, c in enumerate(sb) if k not in axes_b]
    return einsum("".join(sa) + "," + "".join(sb) + "->" + "".join(out), a, b)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32, name=None):
    rows = int(num_rows)
    cols = rows if num_columns is None else int(num_columns)
    if rows < 0 or cols < 0:
        raise _invalid(f"tf.eye needs non-negative sizes, got {rows} x {cols}")
    m = _np.eye(rows, cols, dtype=_dtypes.as_dtype(dtype).as_numpy_dtype or _np.float32)
    if batch_shape is not None:
        m = _np.broadcast_to(m, tuple(int(d) for d in batch_shape) + m.shape).copy()
    return _convert(m, _dtypes.as_dtype(dtype))


# ---- gathers and scatters through an index map ----
# A gather-like op is a NumPy reordering of the flat positions of its input: the forward picks those positions, the
# backward adds the upstream gradient back into them. Positions of -1 are filled (pad's constant).

def _gather_flat(x, positions, fill=0):
    positions = _np.asarray(positions, _np.int64)
    x = _convert(x)
    shape = x._shape_tuple

    def forward(a):
        flat = a.reshape(-1)
        picked = flat[_np.where(positions >= 0, positions, 0)] if flat.size else _np.zeros(positions.shape, a.dtype)
        return _np.where(positions >= 0, picked, _np.asarray(fill, a.dtype)).astype(a.dtype)

    return _numpy_op(forward, [x], (lambda dy, y, x: [_scatter_flat(dy, positions, shape)])
                     if x.dtype.is_floating else None)


def _scatter_flat(g, positions, shape):
    """The sum of g's elements into a tensor of `shape` at their flat positions (the adjoint of _gather_flat)."""
    g = _convert(g)
    size = int(_np.prod(shape, dtype=_np.int64))

    def forward(a):
        keep = positions >= 0
        return _np.bincount(positions[keep], a[keep].astype(_np.float64), minlength=size).reshape(shape).astype(a.dtype)

    return _numpy_op(forward, [g], lambda dy, y, g: [_gather_flat(dy, positions)])


def _positions(shape):
    return _np.arange(int(_np.prod(shape, dtype=_np.int64)), dtype=_np.int64).reshape(shape)


def _index_array(indices, what):
    a = _np.asarray(_convert(indices).numpy())
    if a.dtype.kind not in "iu":
        raise TypeError(f"{what} must be int32 or int64, got {a.dtype}")
    return a.astype(_np.int64)


def _check_range(indices, limit, what):
    if indices.size and (indices.min() < 0 or indices.max() >= limit):
        bad = indices[(indices < 0) | (indices >= limit)].reshape(-1)[0]
        raise _invalid(f"{what}: index {int(bad)} is not in [0, {limit})")


def _nd_positions(shape, indices, batch_dims=0):
    """Flat positions of each slice params[indices[..., :]] (gather_nd's meaning), shape indices.shape[:-1] + the
    slice's shape."""
    if indices.ndim < 1:
        raise _invalid("gather_nd's indices need rank >= 1: the last axis indexes into params")
    if batch_dims:
        if list(indices.shape[:batch_dims]) != list(shape[:batch_dims]):
            raise _invalid(f"gather_nd's batch_dims={batch_dims}: indices' leading dims {list(indices.shape)} must "
                           f"match params' {list(shape)}")
        grids = _np.meshgrid(*[_np.arange(d) for d in indices.shape[:-1]], indexing="ij")[:batch_dims]
        indices = _np.concatenate([_np.stack(grids, -1).astype(_np.int64), indices], -1)
    depth = indices.shape[-1]
    if depth > len(shape):
        raise _invalid(f"gather_nd: indices' last dim {depth} exceeds params' rank {len(shape)}")
    for k in _builtins.range(depth):
        _check_range(indices[..., k], shape[k], f"indices[..., {k}]")
    flat = _positions(shape).reshape([int(_np.prod(shape[:depth], dtype=_np.int64))] + list(shape[depth:]))
    lead = _np.ravel_multi_index(tuple(indices[..., k] for k in _builtins.range(depth)), shape[:depth]) if depth else (
        _np.zeros(indices.shape[:-1], _np.int64))
    return flat[lead]


def gather_nd(params, indices, batch_dims=0, name=None):
    params = _convert(params)
    return _gather_flat(params, _nd_positions(params._shape_tuple, _index_array(indices, "gather_nd's indices"),
                                              int(batch_dims)))


def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    params = _convert(params)
    shape = params._shape_tuple
    batch_dims = int(batch_dims)
    idx = _index_array(indices, "gather's indices")
    if batch_dims < 0:
        batch_dims += idx.ndim
    axis = batch_dims if axis is None else int(axis) % _builtins.max(len(shape), 1)
    if axis == 0 and batch_dims == 0 and params.dtype.is_floating:
        _check_range(idx, shape[0] if shape else 0, "gather's indices")
        return _ops.gather(params, indices)  # the C++ kernel
    if axis < batch_dims or list(idx.shape[:batch_dims]) != list(shape[:batch_dims]):
        raise _invalid(f"gather with batch_dims={batch_dims}: needs axis >= batch_dims and indices' leading dims "
                       f"{list(idx.shape)} matching params' {list(shape)}")
    _check_range(idx, shape[axis], "gather's indices")
    src = _positions(shape)
    if batch_dims == 0:
        positions = _np.take(src, idx, axis=axis)
    else:  # one take per batch element, stacked
        b = int(_np.prod(shape[:batch_dims], dtype=_np.int64))
        s = src.reshape([b] + list(shape[batch_dims:]))
        i = idx.reshape([b] + list(idx.shape[batch_dims:]))
        positions = _np.stack([_np.take(s[k], i[k], axis=axis - batch_dims) for k in _builtins.range(b)])
        positions = positions.reshape(list(shape[:axis]) + list(idx.shape[batch_dims:]) + list(shape[axis + 1:]))
    return _gather_flat(params, positions)


def _scatter_indices(shape, indices, updates, what):
    idx = _index_array(indices, f"{what}'s indices")
    u = _convert(updates)
    depth = idx.shape[-1] if idx.ndim else 0
    want = list(idx.shape[:-1]) + list(shape[depth:])
    if u._shape_tuple != want:
        raise _invalid(f"{what}: updates of shape {u._shape_tuple} must have shape {want} (indices.shape[:-1] + "
                       "shape[indices.shape[-1]:])")
    return _nd_positions(shape, idx), u


def scatter_nd(indices, updates, shape, name=None):
    shape = [int(d) for d in TensorShape(_np.asarray(shape).tolist() if not isinstance(shape, TensorShape)
                                         else shape)]
    positions, u = _scatter_indices(shape, indices, updates, "scatter_nd")
    return _scatter_flat(u, positions, shape)


def _tensor_scatter(kind):
    def op(tensor, indices, updates, name=None):
        t = _convert(tensor)
        positions, u = _scatter_indices(t._shape_tuple, indices, _convert(updates, t.dtype) if not hasattr(
            updates, "_shape_tuple") else updates, f"tf.tensor_scatter_nd_{kind}")
        if u.dtype != t.dtype:
            raise _invalid(f"tf.tensor_scatter_nd_{kind}: updates are {u.dtype.name}, the tensor {t.dtype.name}")
        flat = positions.reshape(-1)

        def forward(a, b):
            out = a.copy().reshape(-1)
            v = b.reshape(-1)
            if kind == "update":
                out[flat] = v
            elif kind == "add":
                _np.add.at(out, flat, v)
            elif kind == "sub":
                _np.subtract.at(out, flat, v)
            elif kind == "min":
                _np.minimum.at(out, flat, v)
            else:
                _np.maximum.at(out, flat, v)
            return out.reshape(a.shape)

        def backward(dy, y, t, u):
            picked = _gather_flat(dy, positions)
            if kind == "add":
                return [dy, picked]
            if kind == "sub":
                return [dy, _ops.negative(picked)]
            if kind == "update":
                kept = _np.ones(t._shape_tuple, t.dtype.as_numpy_dtype)
                kept.reshape(-1)[flat] = 0
                return [_ops.multiply(dy, _convert(kept)), picked]
            # min / max: the gradient goes to whichever of tensor and update gave the result
            return [_ops.multiply(dy, _ops.cast(_ops.equal(t, y), t.dtype)),
                    _ops.multiply(picked, _ops.cast(_ops.equal(u, _gather_flat(y, positions)), t.dtype))]

        return _numpy_op(forward, [t, u], backward if t.dtype.is_floating else None)

    op.__name__ = op.__qualname__ = f"tensor_scatter_nd_{kind}"
    return op


tensor_scatter_nd_update = _tensor_scatter("update")
tensor_scatter_nd_add = _tensor_scatter("add")
tensor_scatter_nd_sub = _tensor_scatter("sub")
tensor_scatter_nd_min = _tensor_scatter("min")
tensor_scatter_nd_max = _tensor_scatter("max")


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    t = _convert(tensor)
    p = _np.asarray(_convert(paddings).numpy() if hasattr(paddings, "_shape_tuple") else paddings, _np.int64)
    rank = len(t._shape_tuple)
    if p.shape != (rank, 2) or (p < 0).any():
        raise _invalid(f"tf.pad's paddings must be non-negative, of shape [{rank}, 2] for a rank-{rank} tensor, "
                       f"got {p.tolist()}")
    modes = {"CONSTANT": "constant", "REFLECT": "reflect", "SYMMETRIC": "symmetric"}
    mode = str(mode).upper()
    if mode not in modes:
        raise ValueError(f"tf.pad's mode must be CONSTANT, REFLECT or SYMMETRIC, got {mode!r}")
    for (before, after), d in zip(p, t._shape_tuple):
        limit = d - 1 if mode == "REFLECT" else d
        if mode != "CONSTANT" and (before > limit or after > limit):
            raise _invalid(f"tf.pad in {mode} mode pads a dimension of size {d} by at most {limit} on each side")
    src = _positions(t._shape_tuple)
    positions = (_np.pad(src, p, mode="constant", constant_values=-1) if mode == "CONSTANT"
                 else _np.pad(src, p, mode=modes[mode]))
    fill = _np.asarray(_convert(constant_values).numpy()).item()
    return _gather_flat(t, positions, fill)


def roll(input, shift, axis, name=None):  # noqa: A002
    t = _convert(input)
    shifts = _np.ravel(_np.asarray(shift)).astype(_np.int64)
    axes = _np.ravel(_np.asarray(axis)).astype(_np.int64)
    if shifts.shape != axes.shape:
        raise _invalid(f"tf.roll's shift {shifts.tolist()} and axis {axes.tolist()} need the same length")
    src = _positions(t._shape_tuple)
    for s, a in zip(shifts, axes):
        src = _np.roll(src, int(s), axis=int(a))
    return _gather_flat(t, src)


def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    t = _convert(input)
    r = _np.asarray(_convert(repeats).numpy() if hasattr(repeats, "_shape_tuple") else repeats, _np.int64)
    if (r < 0).any():
        raise _invalid("tf.repeat's repeats must be non-negative")
    src = _positions(t._shape_tuple)
    try:
        positions = _np.repeat(src, r, axis=None if axis is None else int(axis))
    except ValueError as e:
        raise _invalid(f"tf.repeat: {e}") from None
    return _gather_flat(t, positions)


def boolean_mask(tensor, mask, axis=None, name=None):
    t = _convert(tensor)
    m = _np.asarray(_convert(mask).numpy())
    if m.dtype != _np.bool_:
        raise TypeError(f"tf.boolean_mask's mask must be bool, got {m.dtype}")
    axis = 0 if axis is None else int(axis) % len(t._shape_tuple)
    shape = t._shape_tuple
    if m.ndim == 0 or list(m.shape) != shape[axis:axis + m.ndim]:
        raise ValueError(f"tf.boolean_mask: mask of shape {list(m.shape)} must match the tensor's dims "
                         f"{shape[axis:axis + _builtins.max(m.ndim, 1)]} from axis {axis}")
    src = _positions(shape)
    moved = src.reshape(shape[:axis] + [int(m.size)] + shape[axis + m.ndim:])
    return _gather_flat(t, _np.compress(m.reshape(-1), moved, axis=axis))


def meshgrid(*args, **kwargs):
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"tf.meshgrid got unexpected arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"tf.meshgrid's indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [_ops.reshape(_convert(x), [-1]) for x in args]
    sizes = [x._shape_tuple[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, x in enumerate(xs):
        at = (1 - i if i < 2 else i) if indexing == "xy" and len(xs) >= 2 else i
        shape = [1] * len(xs)
        shape[at] = x._shape_tuple[0]
        out.append(_ops.broadcast_to(_ops.reshape(x, shape), sizes))
    return out


def saturate_cast(value, dtype, name=None):
    """Clamps to the target dtype's range before casting, so out-of-range values saturate instead of wrapping."""
    x = _convert(value)
    target = _dtypes.as_dtype(dtype)
    if x.dtype.is_floating or x.dtype.is_integer:
        lo, hi = target.min, target.max
        if x.dtype.is_integer:
            lo, hi = _builtins.max(lo, x.dtype.min), _builtins.min(hi, x.dtype.max)
        elif x.dtype.name != "float64" and target.is_integer:
            # the clamp bounds in x's dtype: the largest float below 2**31 is what int32 holds exactly
            hi = float(_np.nextafter(_np.float32(hi), _np.float32(0))) if hi > 2 ** 24 else hi
        if target.is_floating and x.dtype.is_floating and target.size >= x.dtype.size:
            return _ops.cast(x, target._lockstep_dtype)
        x = _ops.minimum(_ops.maximum(x, _convert(lo, x.dtype) if x.dtype.is_integer else float(lo)),
                         _convert(hi, x.dtype) if x.dtype.is_integer else float(hi))
    return _ops.cast(x, target._lockstep_dtype)


class _Unique(tuple):
    def __new__(cls, *fields):
        return super().__new__(cls, fields)

    y = property(lambda self: self[0])
    idx = property(lambda self: self[1])
    count = property(lambda self: self[2])


def _unique(x, out_idx, what):
    t = _convert(x)
    a = t.numpy()
    if a.ndim != 1:
        raise _invalid(f"{what} needs a 1-D tensor, got shape {list(a.shape)}: flatten it with tf.reshape(x, [-1])")
    values, first, inverse, counts = _np.unique(a, return_index=True, return_inverse=True, return_counts=True)
    order = _np.argsort(first, kind="stable")  # TF lists values in the order they first appear
    rank = _np.empty_like(order)
    rank[order] = _np.arange(len(order))
    idx_dtype = _dtypes.as_dtype(out_idx).as_numpy_dtype
    return (_convert(values[order], t.dtype), _convert(rank[inverse.reshape(-1)].astype(idx_dtype)),
            _convert(counts[order].astype(idx_dtype)))


def unique(x, out_idx=_dtypes.int32, name=None):
    y, idx, _ = _unique(x, out_idx, "tf.unique")
    return _Unique(y, idx)


def unique_with_counts(x, out_idx=_dtypes.int32, name=None):
    return _Unique(*_unique(x, out_idx, "tf.unique_with_counts"))


def searchsorted(sorted_sequence, values, side="left", out_type=_dtypes.int32, name=None):
    if side not in ("left", "right"):
        raise ValueError(f"tf.searchsorted's side must be 'left' or 'right', got {side!r}")
    s, v = _np.asarray(_convert(sorted_sequence).numpy()), _np.asarray(_convert(values).numpy())
    if s.ndim == 0 or v.ndim == 0 or s.shape[:-1] != v.shape[:-1]:
        raise _invalid(f"tf.searchsorted: sorted_sequence {list(s.shape)} and values {list(v.shape)} need rank >= 1 "
                       "and the same leading dims")
    rows_s, rows_v = s.reshape(-1, s.shape[-1]), v.reshape(-1, v.shape[-1])
    out = _np.stack([_np.searchsorted(a, b, side=side) for a, b in zip(rows_s, rows_v)]) if rows_s.shape[0] else (
        _np.zeros(rows_v.shape, _np.int64))
    return _convert(out.reshape(v.shape).astype(_dtypes.as_dtype(out_type).as_numpy_dtype))


def histogram_fixed_width(values, value_range, nbins=100, dtype=_dtypes.int32, name=None):
    v = _np.asarray(_convert(values).numpy(), _np.float64).reshape(-1)
    lo, hi = (float(r) for r in _np.asarray(_convert(value_range).numpy()).reshape(-1)[:2])
    nbins = int(nbins)
    if nbins <= 0 or not hi > lo:
        raise _invalid(f"tf.histogram_fixed_width needs nbins > 0 and value_range[0] < value_range[1], got nbins="
                       f"{nbins}, value_range=[{lo}, {hi}]")
    bins = _np.clip(_np.floor((v - lo) / (hi - lo) * nbins), 0, nbins - 1).astype(_np.int64)
    return _convert(_np.bincount(bins, minlength=nbins).astype(_dtypes.as_dtype(dtype).as_numpy_dtype))


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    from . import linalg

    return linalg.norm(tensor, ord, axis, keepdims)
