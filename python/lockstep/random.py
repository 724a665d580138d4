"""tf.random: the stateful draws of lockstep's Philox generator (set_seed makes them repeatable), TensorFlow's
stateless ops and tf.random.Generator, which reproduce TensorFlow's CPU values bit for bit from (shape, seed, dtype)."""
import enum as _enum
import os as _os
import threading as _threading

import numpy as _np

from . import _lockstep, _unimplemented, dtypes as _dtypes, errors as _errors
from ._tensor import Tensor, TensorShape
from ._variable import Variable

_ops = _lockstep.ops


def set_seed(seed):
    _ops.set_random_seed(int(seed))


def _draw(kind, shape, a, b, dtype, seed):
    return _ops.random(kind, list(TensorShape(shape)), float(a), float(b), _dtypes.as_dtype(dtype)._lockstep_dtype,
                       None if seed is None else int(seed))


# ---- Philox4x32-10 exactly as TensorFlow's CPU kernels run it (tensorflow/core/lib/random/philox_random.h)

_M0, _M1 = _np.uint64(0xD2511F53), _np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_LOW32 = _np.uint64(0xFFFFFFFF)
_SHIFT32 = _np.uint64(32)


def _philox_blocks(key, counter, offsets):
    """The four 32-bit outputs [n, 4] (uint32) of the 128-bit counters counter + offsets[i] under the 64-bit key.
    key: Python int; counter: (low64, high64) Python ints; offsets: int array of counter steps."""
    offsets = _np.asarray(offsets, _np.uint64).reshape(-1)
    with _np.errstate(over="ignore"):
        low = _np.uint64(counter[0]) + offsets
        high = _np.uint64(counter[1]) + (low < offsets).astype(_np.uint64)
    c = [low & _LOW32, low >> _SHIFT32, high & _LOW32, high >> _SHIFT32]
    k0, k1 = key & 0xFFFFFFFF, key >> 32 & 0xFFFFFFFF
    for r in range(10):
        if r:
            k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
        p0, p1 = _M0 * c[0], _M1 * c[2]
        c = [(p1 >> _SHIFT32) ^ c[1] ^ _np.uint64(k0), p1 & _LOW32, (p0 >> _SHIFT32) ^ c[3] ^ _np.uint64(k1),
             p0 & _LOW32]
    return _np.stack(c, axis=1).astype(_np.uint32)


def _words(key, counter, n):
    """The first n 32-bit outputs of the stream at (key, counter), in order."""
    return _philox_blocks(key, counter, _np.arange((n + 3) // 4)).reshape(-1)[:n]


def _skip(counter, n):
    low = counter[0] + n
    return low & (2**64 - 1), (counter[1] + (low >> 64)) & (2**64 - 1)


def _key_counter(seed):
    """TensorFlow's scrambling of a stateless seed [2] into a Philox key and counter
    (StatelessRandomGetKeyCounter: one Philox block of the seed under a fixed key)."""
    seed = _seed_values(seed)
    s0, s1 = (int(v) & (2**64 - 1) for v in seed)
    mix = _philox_blocks(0x02461E293EC8F720, (s0, s1), [0])[0].astype(object)
    return int(mix[0]) | int(mix[1]) << 32, (0, int(mix[2]) | int(mix[3]) << 32)


def _seed_values(seed):
    """A stateless seed as an int64 array [2]; TensorFlow wants exactly that shape and an integer dtype."""
    values = _np.asarray(seed.numpy() if isinstance(seed, (Tensor, Variable)) else seed)
    if values.dtype.kind not in "iu":
        raise _errors.InvalidArgumentError(f"seed must be int32 or int64 values of shape [2], got {values.dtype}: "
                                           "pass two integers, e.g. [1, 2]")
    if values.shape != (2,):
        raise _errors.InvalidArgumentError(f"seed must have shape [2], got shape {list(values.shape)}: pass two "
                                           "integers, e.g. [1, 2]")
    return values.astype(_np.int64)


# ---- TensorFlow's transforms of 32-bit words into values (tensorflow/core/lib/random/random_distributions.h)

def _unit_float(words):
    """[0, 1) float32 from the low 23 bits of each word: the mantissa of a float in [1, 2), minus one."""
    return ((words & _np.uint32(0x7FFFFF)) | _np.uint32(0x3F800000)).view(_np.float32) - _np.float32(1)


def _unit_double(high, low):
    """[0, 1) float64 from 52 bits: 20 of `high` and all of `low`."""
    bits = (high.astype(_np.uint64) & _np.uint64(0xFFFFF)) << _SHIFT32 | low.astype(_np.uint64)
    return (bits | _np.uint64(0x3FF0000000000000)).view(_np.float64) - 1.0


def _libm():
    import ctypes
    import ctypes.util

    path = ctypes.util.find_library("m")
    if path is None:
        return None
    lib = ctypes.CDLL(path)
    for name in ("logf", "sinf", "cosf"):
        getattr(lib, name).restype, getattr(lib, name).argtypes = ctypes.c_float, [ctypes.c_float]
    return lib


_LIBM = _libm()
# How far (in float32 ulps) glibc's logf / sinf / cosf may land from the correctly rounded value before rounding:
# measured 0.28 and 0.06 over 300000 arguments; its documented bound for logf is 0.82 ulp after rounding.
_LIBM_SLACK = {"logf": 0.33, "sinf": 0.1, "cosf": 0.1}


def _float32_libm(name, x):
    """glibc's float function `name` (what TF's float code calls) of float32 x. NumPy's float32 functions round
    differently, so the value is taken in float64 and rounded; only where that lands near a rounding midpoint
    (a third of the logs, a tenth of the sines) does the C function decide, one call per value."""
    exact = getattr(_np, name[:-1])(x.astype(_np.float64))
    out = exact.astype(_np.float32)
    if _LIBM is None:
        return out
    distance = _np.abs(exact - out) / _np.spacing(_np.abs(out)).astype(_np.float64)
    near = (_np.abs(distance - 0.5) < _LIBM_SLACK[name]) | ((out.view(_np.uint32) & _np.uint32(0x7FFFFF)) == 0)
    function = getattr(_LIBM, name)
    out[near] = [function(v) for v in x[near].tolist()]
    return out


def _box_muller(u1, u2, dtype):
    """Pairs of normal values from pairs of uniforms, as TF's BoxMuller: the angle is 2 pi u2 in double rounded to
    dtype; float32 takes glibc's logf and sincosf, float64 glibc's log (lockstep's op calls it) and sin/cos
    (NumPy's float64 ones agree with glibc's)."""
    u1 = _np.maximum(u1, dtype(1e-7))
    angle = (2.0 * _np.pi * u2.astype(_np.float64)).astype(dtype)
    if dtype is _np.float32:
        radius = _np.sqrt(_np.float32(-2) * _float32_libm("logf", u1))
        return _float32_libm("sinf", angle) * radius, _float32_libm("cosf", angle) * radius
    radius = _np.sqrt(-2.0 * _ops.log(_ops.convert_to_tensor(u1, None, None)).numpy())
    return _np.sin(angle) * radius, _np.cos(angle) * radius


def _normals_of_blocks(blocks, dtype):
    """Normal values from Philox blocks [n, 4]: four float32 or two float64 per block, in TF's order."""
    if dtype is _np.float32:
        u = _unit_float(blocks)
        a0, a1 = _box_muller(u[:, 0], u[:, 1], _np.float32)
        b0, b1 = _box_muller(u[:, 2], u[:, 3], _np.float32)
        return _np.stack([a0, a1, b0, b1], axis=1)
    a0, a1 = _box_muller(_unit_double(blocks[:, 0], blocks[:, 1]), _unit_double(blocks[:, 2], blocks[:, 3]),
                         _np.float64)
    return _np.stack([a0, a1], axis=1)


def _float_kind(dtype):
    """The NumPy type a float dtype's values are drawn in: bfloat16 draws float32 values and rounds them."""
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise TypeError(f"dtype must be a floating type (float32, float64, bfloat16), got {dtype.name}")
    return dtype, (_np.float64 if dtype is _dtypes.float64 else _np.float32)


def _uniform_values(key, counter, n, dtype, bfloat16=False):
    if bfloat16:  # TF fills the 7 mantissa bits of a bfloat16 from each word: exact in float32
        return (_words(key, counter, n) & _np.uint32(0x7F)).astype(_np.float32) / _np.float32(128)
    if dtype is _np.float32:
        return _unit_float(_words(key, counter, n))
    words = _words(key, counter, 2 * n)
    return _unit_double(words[0::2], words[1::2])


def _normal_values(key, counter, n, dtype):
    per = 4 if dtype is _np.float32 else 2
    return _normals_of_blocks(_philox_blocks(key, counter, _np.arange(-(-n // per))), dtype).reshape(-1)[:n]


# Each group of truncated normal values owns 256 samples' worth of counters (TF's kReservedSamplesPerOutput),
# so that a group's values do not depend on how many draws another group rejected.
_RESERVED_SAMPLES = 256


def _truncated_values(key, counter, n, dtype):
    """TF's TruncatedNormalDistribution: each group takes, in order, the first `per` normal values of its own
    counters that lie within two standard deviations."""
    per = 4 if dtype is _np.float32 else 2
    groups = -(-n // per)
    base = _np.arange(groups, dtype=_np.uint64) * _np.uint64(per * _RESERVED_SAMPLES // 4)
    candidates = _np.concatenate([_normals_of_blocks(_philox_blocks(key, counter, base + _np.uint64(r)), dtype)
                                  for r in range(2)], axis=1)
    rounds = 2
    while True:
        short = _np.flatnonzero(_np.count_nonzero(_np.abs(candidates) < 2, axis=1) < per)
        if short.size == 0:
            break
        more = _np.full((groups, per), _np.nan, dtype)  # NaN is never within the cut, so other groups skip it
        more[short] = _normals_of_blocks(_philox_blocks(key, counter, base[short] + _np.uint64(rounds)), dtype)
        candidates, rounds = _np.concatenate([candidates, more], axis=1), rounds + 1
    first = _np.argsort(~(_np.abs(candidates) < 2), axis=1, kind="stable")[:, :per]
    return _np.take_along_axis(candidates, first, axis=1).reshape(-1)[:n]


def _int_values(key, counter, n, dtype, bounds=None):
    """Integers as TF's UniformDistribution (bounds: [lo, hi), taken modulo the range) or, without bounds,
    UniformFullIntDistribution: one word per int32, two (low, high) per int64."""
    np_type = _np.dtype(dtype.as_numpy_dtype)
    if np_type.itemsize == 4:
        bits = _words(key, counter, n).astype(_np.uint64)
        mask = _LOW32
    else:
        words = _words(key, counter, 2 * n).astype(_np.uint64)
        bits = words[0::2] | words[1::2] << _SHIFT32
        mask = _np.uint64(2**64 - 1)
    if bounds is None:
        return (bits & mask).astype(np_type.str.replace("i", "u")).view(np_type)
    lo, hi = bounds
    span = _np.uint64((hi - lo) & int(mask))
    with _np.errstate(over="ignore"):
        return ((bits % span + _np.uint64(lo & int(mask))) & mask).astype(np_type.str.replace("i", "u")).view(np_type)


def _tensor(values, dtype):
    """A lockstep tensor of dtype from NumPy values (bfloat16 by rounding float32, as TF casts)."""
    t = _ops.convert_to_tensor(_np.asarray(values, order="C"), None, None)
    return t if t.dtype is dtype else _ops.cast(t, dtype._lockstep_dtype)


def _shape_list(shape):
    if isinstance(shape, (Tensor, Variable)):
        shape = shape.numpy().tolist()
    dims = list(TensorShape(shape))
    if any(d is None or d < 0 for d in dims):
        raise ValueError(f"shape must be fully defined and non-negative, got {shape!r}")
    return dims


def _affine(values, scale, shift, dtype):
    """values * scale + shift in dtype, as TF's Python wrappers do after the raw op: through lockstep's ops (so a
    GradientTape sees them) when scale or shift is a tensor, else in NumPy with the same float rounding."""
    from . import math as _math

    if isinstance(scale, (Tensor, Variable)) or isinstance(shift, (Tensor, Variable)):
        from . import _core

        return _math.add(_math.multiply(_tensor(values, dtype), _core.convert_to_tensor(scale, dtype=dtype)),
                         _core.convert_to_tensor(shift, dtype=dtype))
    np_type = values.dtype
    out = values * _np.asarray(scale, np_type) + _np.asarray(shift, np_type)
    return _tensor(out.astype(np_type), dtype)


def _check_alg(alg):
    """The algorithms lockstep draws with: TF's Philox (also what "auto_select" picks on CPU)."""
    value = _alg_value(alg)
    if value == Algorithm.THREEFRY.value:
        raise NotImplementedError("tf.random with alg='threefry' is not implemented by lockstep (see docs/python.md)")
    return value


def _alg_value(alg):
    if alg is None:
        return Algorithm.AUTO_SELECT.value
    if isinstance(alg, Algorithm):
        return alg.value
    if isinstance(alg, (int, _np.integer)) and int(alg) in (1, 2, 3):
        return int(alg)
    if isinstance(alg, str):
        name = alg.strip().lower().replace("-", "").replace("_", "")
        names = {"philox": 1, "threefry": 2, "autoselect": 3}
        if name in names:
            return names[name]
    raise ValueError(f"alg got unsupported value {alg!r}: use 'philox', 'threefry' or 'auto_select'")


class Algorithm(_enum.Enum):
    """A random-number algorithm, as tf.random.Algorithm."""

    PHILOX = 1
    THREEFRY = 2
    AUTO_SELECT = 3


# ---- the stateless ops: values depend only on (shape, seed, dtype), and equal TensorFlow's on CPU

def _stateless(draw, shape, seed, alg):
    """draw(key, counter, n) at TF's key and counter of seed, shaped."""
    _check_alg(alg)
    dims = _shape_list(shape)
    return draw(*_key_counter(seed), int(_np.prod(dims, dtype=_np.int64))).reshape(dims)


def _int_bounds(dtype, minval, maxval):
    """[lo, hi) of a bounded integer draw; TF wants both bounds or neither (None: the full range)."""
    if (minval is None) != (maxval is None):
        raise ValueError(f"For integer dtype {dtype.name}, minval and maxval must be both None or both given, got "
                         f"minval={minval} and maxval={maxval}")
    if minval is None:
        return None
    lo, hi = _scalar_int(minval, "minval"), _scalar_int(maxval, "maxval")
    if lo >= hi:
        raise _errors.InvalidArgumentError(f"Need minval < maxval, got {lo} >= {hi}")
    return lo, hi


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=_dtypes.float32, name=None, alg="auto_select"):
    dtype = _dtypes.as_dtype(dtype)
    if dtype.is_integer:
        bounds = _int_bounds(dtype, minval, maxval)
        return _tensor(_stateless(lambda k, c, n: _int_values(k, c, n, dtype, bounds), shape, seed, alg), dtype)
    dtype, np_type = _float_kind(dtype)
    values = _stateless(lambda k, c, n: _uniform_values(k, c, n, np_type, dtype is _dtypes.bfloat16), shape, seed, alg)
    return _uniform_affine(values, minval, 1 if maxval is None else maxval, dtype)


def _uniform_affine(values, low, high, dtype):
    """values * (high - low) + low, TF's order of rounding."""
    if isinstance(low, (Tensor, Variable)) or isinstance(high, (Tensor, Variable)):
        from . import math as _math

        return _affine(values, _math.subtract(high, low), low, dtype)
    span = _np.asarray(high, values.dtype) - _np.asarray(low, values.dtype)
    return _tensor((values * span + _np.asarray(low, values.dtype)).astype(values.dtype), dtype)


def _scalar_int(value, what):
    if isinstance(value, (Tensor, Variable)):
        value = value.numpy()
    value = _np.asarray(value)
    if value.shape != ():
        raise _errors.InvalidArgumentError(f"{what} must be a scalar, got shape {list(value.shape)}")
    return int(value)


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None, alg="auto_select"):
    dtype, np_type = _float_kind(dtype)
    return _affine(_stateless(lambda k, c, n: _normal_values(k, c, n, np_type), shape, seed, alg), stddev, mean, dtype)


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None,
                               alg="auto_select"):
    dtype, np_type = _float_kind(dtype)
    values = _stateless(lambda k, c, n: _truncated_values(k, c, n, np_type), shape, seed, alg)
    return _affine(values, stddev, mean, dtype)


def _int_dtype_of(value):
    """The integer dtype tf.convert_to_tensor gives value: a tensor's or NumPy's own, int32 for Python ints."""
    if isinstance(value, (Tensor, Variable)):
        return value.dtype
    if isinstance(value, (_np.ndarray, _np.generic)):
        return _dtypes.as_dtype(value.dtype)
    values = _np.asarray(value)
    if values.dtype.kind not in "iu":
        raise TypeError(f"expected integers, got {value!r}")
    fits = values.size == 0 or (values.min() >= -2**31 and values.max() < 2**31)
    return _dtypes.int32 if fits else _dtypes.int64


def stateless_split(seed, num=2, alg="auto_select"):
    """num new seeds [num, 2], in seed's dtype: full-range integers drawn from seed."""
    return stateless_uniform([int(num), 2], seed, minval=None, maxval=None, dtype=_int_dtype_of(seed), alg=alg)


def stateless_fold_in(seed, data, alg="auto_select"):
    """A new seed [2] in data's dtype: one full-range integer drawn from seed, then data."""
    dtype = _int_dtype_of(data)
    data = _np.asarray(data.numpy() if isinstance(data, (Tensor, Variable)) else data)
    if data.shape != ():
        raise ValueError(f"data must be an integer scalar, got shape {list(data.shape)}")
    first = stateless_uniform([], seed, minval=None, maxval=None, dtype=dtype, alg=alg).numpy()
    return _tensor(_np.array([first, data], dtype=dtype.as_numpy_dtype), dtype)


split = stateless_split
fold_in = stateless_fold_in


def _logits_matrix(logits):
    values = logits.numpy() if isinstance(logits, (Tensor, Variable)) else _np.asarray(logits, _np.float32)
    if values.ndim != 2:
        raise _errors.InvalidArgumentError(f"logits should be a matrix [batch_size, num_classes], got shape "
                                           f"{list(values.shape)}: add a batch axis with tf.expand_dims(logits, 0)")
    if values.shape[1] == 0:
        raise _errors.InvalidArgumentError("logits must have at least one class (num_classes should be positive)")
    if values.dtype.kind != "f":
        raise TypeError(f"logits must be floating point, got {values.dtype}")
    return values


def _categorical(logits, num_samples, dtype, key, counter):
    """TF's CPU multinomial kernel run as one shard: per row, the cumulative exp(logit - max) over finite logits,
    and for each sample the first class whose running total exceeds a uniform double times the total. Rows draw
    one after another from the stream."""
    dtype = _dtypes.as_dtype(dtype) if dtype else _dtypes.int64
    if dtype not in (_dtypes.int32, _dtypes.int64):
        raise ValueError(f"dtype must be int32 or int64, got {dtype.name}")
    values = _logits_matrix(logits)
    num_samples = _scalar_int(num_samples, "num_samples")
    if num_samples < 0:
        raise _errors.InvalidArgumentError(f"num_samples should be nonnegative, got {num_samples}")
    batch, classes = values.shape
    finite = _np.isfinite(values)
    top = _np.where(finite, values, -_np.inf).max(axis=1, initial=_np.finfo(values.dtype).min).astype(_np.float64)
    cdf = _np.cumsum(_np.where(finite, _np.exp(values.astype(_np.float64) - top[:, None]), 0.0), axis=1)
    words = _words(key, counter, 2 * batch * num_samples).reshape(batch, num_samples, 2)
    to_find = _unit_double(words[..., 0], words[..., 1]) * cdf[:, -1:]
    out = _np.empty((batch, num_samples), dtype.as_numpy_dtype)
    for row in range(batch):
        out[row] = _np.searchsorted(cdf[row], to_find[row], side="right")
    return _tensor(out, dtype)


def stateless_categorical(logits, num_samples, seed, dtype=_dtypes.int64, name=None):
    key, counter = _key_counter(seed)
    return _categorical(logits, num_samples, dtype, key, counter)


# ---- stateful draws that lockstep's C++ generator has no kernel for: a stateless seed taken from its stream,
# so they follow tf.random.set_seed like the others

def _global_seed(seed):
    words = _draw("uniform", [2], 0, 2**31, _dtypes.float64, seed).numpy()
    return words.astype(_np.int64)


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    key, counter = _key_counter(_global_seed(seed))
    return _categorical(logits, num_samples, dtype, key, counter)


def shuffle(value, seed=None, name=None):
    """value with its first axis in a random order (a permutation by sorting random 64-bit keys)."""
    from . import _core
    from .data import _structure

    size = len(value._values) if isinstance(value, _structure.StringTensor) else None
    if size is None:
        value = _core.convert_to_tensor(value)
        if not value._shape_tuple:
            return value  # a scalar has one order, as in TF
        size = value._shape_tuple[0]
    keys = stateless_uniform([size], _global_seed(seed), minval=None, maxval=None, dtype=_dtypes.int64).numpy()
    order = _np.argsort(keys, kind="stable")
    if isinstance(value, _structure.StringTensor):
        return type(value)(value._values[order])
    return _lockstep.ops.gather(value, _tensor(order, _dtypes.int64))


def _scalar(value):
    return not isinstance(value, (Tensor, Variable)) and _np.ndim(value) == 0


def _stateful(kind, shape, scale, shift, dtype, seed):
    """A draw of lockstep's C++ generator; tensor or array parameters are applied after a standard draw, through
    lockstep's ops so that a GradientTape sees them."""
    dtype, _ = _float_kind(dtype)
    if _scalar(scale) and _scalar(shift):
        a, b = (shift, shift + scale) if kind == "uniform" else (shift, scale)
        return _draw(kind, shape, a, b, dtype, seed)
    from . import _core, math as _math

    unit = _draw(kind, shape, 0.0, 1.0, dtype, seed)
    return _math.add(_math.multiply(unit, _core.convert_to_tensor(scale, dtype=dtype)),
                     _core.convert_to_tensor(shift, dtype=dtype))


def uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    dtype = _dtypes.as_dtype(dtype)
    if dtype.is_integer:
        if maxval is None:
            raise ValueError(f"Must specify maxval for integer dtype {dtype.name}: tf.random.uniform draws integers "
                             "in [minval, maxval)")
        bounds = _int_bounds(dtype, minval, maxval)
        draw = _stateless(lambda k, c, n: _int_values(k, c, n, dtype, bounds), shape, _global_seed(seed), None)
        return _tensor(draw, dtype)
    from . import math as _math

    high = 1.0 if maxval is None else maxval
    scale = high - minval if _scalar(high) and _scalar(minval) else _math.subtract(high, minval)
    return _stateful("uniform", shape, scale, minval, dtype, seed)


def normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    return _stateful("normal", shape, stddev, mean, dtype, seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    return _stateful("truncated", shape, stddev, mean, dtype, seed)


# ---- gamma, Poisson and binomial: NumPy's samplers on a Philox stream keyed by TF's (key, counter) of the seed.
# Deterministic in (shape, seed, parameters) but not TensorFlow's values (its rejection samplers are not reproduced).

def _numpy_generator(key, counter):
    return _np.random.Generator(_np.random.Philox(counter=counter[0] | counter[1] << 64, key=key))


def _params(value, dtype):
    values = value.numpy() if isinstance(value, (Tensor, Variable)) else _np.asarray(value)
    return values.astype(dtype)


def _broadcast_to(values, dims, what):
    try:
        return _np.broadcast_to(values, dims)
    except ValueError:
        raise _errors.InvalidArgumentError(f"{what} of shape {list(values.shape)} does not broadcast to the output "
                                           f"shape {dims}") from None


def _gamma(dims, key, counter, alpha, beta, dtype):
    dtype, np_type = _float_kind(dtype)
    alpha, beta = _params(alpha, np_type), _params(1 if beta is None else beta, np_type)
    if (alpha <= 0).any() or (beta <= 0).any():
        raise _errors.InvalidArgumentError("gamma needs alpha > 0 and beta > 0")
    draws = _numpy_generator(key, counter).standard_gamma(_broadcast_to(alpha, dims, "alpha").astype(_np.float64))
    out = _np.maximum(_np.finfo(np_type).tiny, draws.astype(np_type) / _broadcast_to(beta, dims, "beta"))
    return _tensor(out.astype(np_type), dtype)


def _poisson(dims, key, counter, lam, dtype):
    dtype = _dtypes.as_dtype(dtype)
    lam = _params(lam, _np.float64)
    if (lam < 0).any():
        raise _errors.InvalidArgumentError("poisson needs lam >= 0")
    draws = _numpy_generator(key, counter).poisson(_broadcast_to(lam, dims, "lam"))
    return _tensor(draws.astype(dtype.as_numpy_dtype), dtype)


def _binomial(dims, key, counter, counts, probs, dtype):
    dtype = _dtypes.as_dtype(dtype)
    counts, probs = _params(counts, _np.float64), _params(probs, _np.float64)
    if (probs < 0).any() or (probs > 1).any() or (counts < 0).any():
        raise _errors.InvalidArgumentError("binomial needs counts >= 0 and probs in [0, 1]")
    draws = _numpy_generator(key, counter).binomial(_broadcast_to(counts, dims, "counts").astype(_np.int64),
                                                    _broadcast_to(probs, dims, "probs"))
    return _tensor(draws.astype(dtype.as_numpy_dtype), dtype)


def _parameter_shape(*values):
    return list(_np.broadcast_shapes(*(_np.shape(v.numpy() if isinstance(v, (Tensor, Variable)) else v)
                                       for v in values if v is not None)))


# The stateless samplers take the whole output shape (parameters broadcast to it); the stateful ones draw `shape`
# samples of each parameter, so their output is shape + the parameters' shape.

def stateless_gamma(shape, seed, alpha, beta=None, dtype=_dtypes.float32, name=None):
    return _gamma(_shape_list(shape), *_key_counter(seed), alpha, beta, dtype)


def stateless_poisson(shape, seed, lam, dtype=_dtypes.int32, name=None):
    return _poisson(_shape_list(shape), *_key_counter(seed), lam, dtype)


def stateless_binomial(shape, seed, counts, probs, output_dtype=_dtypes.int32, name=None):
    return _binomial(_shape_list(shape), *_key_counter(seed), counts, probs, output_dtype)


def gamma(shape, alpha, beta=None, dtype=_dtypes.float32, seed=None, name=None):
    dims = _shape_list(shape) + _parameter_shape(alpha, beta)
    return _gamma(dims, *_key_counter(_global_seed(seed)), alpha, beta, dtype)


def poisson(shape, lam, dtype=_dtypes.float32, seed=None, name=None):
    dims = _shape_list(shape) + _parameter_shape(lam)
    return _poisson(dims, *_key_counter(_global_seed(seed)), lam, dtype)


# ---- tf.random.Generator: state int64 [3] = [counter low, counter high, key], as TensorFlow's Philox generator,
# whose draws are the stateless kernels run at that key and counter (no seed scrambling)

_STATE_SIZE = 3
# Each draw of n values moves the counter by n * 256, TF's reservation, so that streams do not overlap.
_COUNTER_STEP = 256


def _state_values(value, size, what):
    """int64 values of a seed or state: Python ints above 2**63 wrap as TF's SEED_TYPE does."""
    if isinstance(value, (Tensor, Variable)):
        value = value.numpy()
    if isinstance(value, (list, tuple)):
        value = [v - 2**64 if isinstance(v, int) and v >= 2**63 else v for v in value]
    values = _np.asarray(value)
    if values.dtype.kind not in "iu":
        raise TypeError(f"{what} must be integers, got {value!r}")
    values = values.astype(_np.uint64).view(_np.int64).reshape(-1)
    if size is not None and values.size != size:
        raise ValueError(f"{what} must have {size} int64 values, got shape {list(values.shape)}")
    return values


def create_rng_state(seed, alg):
    """The state [3] of a Philox generator from seed: an int is cut into 64-bit words (lowest first); a shorter
    seed is padded with zeros on the left, so a small seed lands in the key, not the counter."""
    _generator_alg(alg)
    if isinstance(seed, int):
        seed = [seed >> (64 * i) & (2**64 - 1) for i in range(_STATE_SIZE)]
    values = _state_values(seed, None, "seed")[:_STATE_SIZE]
    state = _np.concatenate([_np.zeros(_STATE_SIZE - values.size, _np.int64), values])
    return _tensor(state, _dtypes.int64)


def _generator_alg(alg):
    value = _check_alg(Algorithm.PHILOX if alg is None else alg)
    return Algorithm.PHILOX.value if value == Algorithm.AUTO_SELECT.value else value


class Generator:
    """tf.random.Generator: a Philox stream whose state is a tf.Variable, so checkpoints hold its position."""

    def __init__(self, copy_from=None, state=None, alg=None):
        if copy_from is not None:
            if state is not None or alg is not None:
                raise ValueError("Generator(copy_from=...) takes neither state nor alg")
            state, alg = copy_from.state.numpy(), copy_from.algorithm
        elif state is None or alg is None:
            raise ValueError("Generator needs state and alg (or copy_from); use Generator.from_seed(seed) to start one")
        self._alg = _generator_alg(alg)
        if isinstance(state, Variable):
            _state_values(state, _STATE_SIZE, "state")
            self._state_var = state
        else:
            self._state_var = Variable(_state_values(state, _STATE_SIZE, "state"), trainable=False,
                                       dtype=_dtypes.int64)
        self._lock = _threading.Lock()

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls(state=create_rng_state(seed, _generator_alg(alg)), alg=_generator_alg(alg))

    @classmethod
    def from_state(cls, state, alg):
        return cls(state=state, alg=alg)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        return cls(state=_np.frombuffer(_os.urandom(8 * _STATE_SIZE), _np.int64).copy(), alg=_generator_alg(alg))

    @classmethod
    def from_key_counter(cls, key, counter, alg):
        return cls(state=cls._key_counter_state(key, counter), alg=alg)

    @staticmethod
    def _key_counter_state(key, counter):
        counter = _state_values(counter, _STATE_SIZE - 1, "counter")
        return _np.concatenate([counter, _state_values(key, 1, "key")])

    state = property(lambda self: self._state_var)
    algorithm = property(lambda self: self._alg)

    @property
    def key(self):
        return self._state_var[-1]

    def reset(self, state):
        self._state_var.assign(_state_values(state, _STATE_SIZE, "state"))

    def reset_from_seed(self, seed):
        self._state_var.assign(create_rng_state(seed, self._alg))

    def reset_from_key_counter(self, key, counter):
        self._state_var.assign(self._key_counter_state(key, counter))

    def _take(self, n):
        """The (key, counter) for n values, moving the stored counter past them."""
        with self._lock:
            state = self._state_var.numpy().view(_np.uint64)
            counter, key = (int(state[0]), int(state[1])), int(state[2])
            low, high = _skip(counter, n * _COUNTER_STEP)
            self._state_var.assign(_np.array([low, high, key], _np.uint64).view(_np.int64))
        return key, counter

    def skip(self, delta):
        """Moves the counter as delta values would and returns the state before."""
        before = self._state_var.numpy()
        self._take(int(delta))
        return _tensor(before, _dtypes.int64)

    def _floats(self, draw, shape, dtype):
        dtype, np_type = _float_kind(dtype)
        dims = _shape_list(shape)
        n = int(_np.prod(dims, dtype=_np.int64))
        return dtype, draw(*self._take(n), n, np_type).reshape(dims)

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None):
        dtype, values = self._floats(_normal_values, shape, dtype)
        return _affine(values, stddev, mean, dtype)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, name=None):
        dtype, values = self._floats(_truncated_values, shape, dtype)
        return _affine(values, stddev, mean, dtype)

    def uniform(self, shape, minval=0, maxval=None, dtype=_dtypes.float32, name=None):
        dtype = _dtypes.as_dtype(dtype)
        if dtype.is_integer:
            bounds = _int_bounds(dtype, minval, maxval)
            return self._ints(shape, dtype, bounds)
        bfloat16 = dtype is _dtypes.bfloat16
        dtype, values = self._floats(lambda k, c, n, t: _uniform_values(k, c, n, t, bfloat16), shape, dtype)
        return _uniform_affine(values, minval, 1 if maxval is None else maxval, dtype)

    def _ints(self, shape, dtype, bounds):
        dims = _shape_list(shape)
        n = int(_np.prod(dims, dtype=_np.int64))
        return _tensor(_int_values(*self._take(n), n, dtype, bounds).reshape(dims), dtype)

    def uniform_full_int(self, shape, dtype="uint64", name=None):
        if dtype in ("uint64", "uint32", _np.uint64, _np.uint32):
            raise NotImplementedError(f"tf.random.Generator.uniform_full_int with dtype={dtype} is not implemented by "
                                      "lockstep (see docs/python.md): pass dtype=tf.int64 or tf.int32")
        dtype = _dtypes.as_dtype(dtype)
        if not dtype.is_integer:
            raise TypeError(f"uniform_full_int needs an integer dtype, got {dtype.name}")
        return self._ints(shape, dtype, None)

    def binomial(self, shape, counts, probs, dtype=_dtypes.int32, name=None):
        dims = _shape_list(shape)
        return _binomial(dims, *self._take(int(_np.prod(dims, dtype=_np.int64))), counts, probs, dtype)

    def make_seeds(self, count=1):
        """count seeds for the stateless ops, as columns of an int64 [2, count]: random keys over zeros."""
        keys = self.uniform_full_int([int(count)], _dtypes.int64).numpy()
        return _tensor(_np.stack([keys, _np.zeros_like(keys)]), _dtypes.int64)

    def split(self, count=1):
        """count new generators, each with a random key and a zero counter."""
        keys = self.uniform_full_int([int(count)], _dtypes.int64).numpy()
        return [Generator(state=[0, 0, int(k)], alg=self._alg) for k in keys]


_global_generator = None


def get_global_generator():
    global _global_generator
    if _global_generator is None:
        _global_generator = Generator.from_non_deterministic_state()
    return _global_generator


def set_global_generator(generator):
    global _global_generator
    _global_generator = generator


class _Experimental:
    """tf.random.experimental: the stateless seed tools and the Generator under their experimental names."""

    stateless_split = staticmethod(stateless_split)
    stateless_fold_in = staticmethod(stateless_fold_in)
    Generator = Generator
    Algorithm = Algorithm
    create_rng_state = staticmethod(create_rng_state)
    get_global_generator = staticmethod(get_global_generator)
    set_global_generator = staticmethod(set_global_generator)

    def __getattr__(self, name):
        if _unimplemented.tf_has("tf.random.experimental", name):
            raise NotImplementedError(_unimplemented.message(f"tf.random.experimental.{name}"))
        raise AttributeError(f"tf.random.experimental has no attribute '{name}'")


experimental = _Experimental()
_unimplemented.install(globals(), "tf.random")
