"""tf.random: draws from lockstep's Philox generator; set_seed makes the draws that follow repeatable."""
from . import _lockstep, dtypes as _dtypes
from ._tensor import TensorShape

_ops = _lockstep.ops


def set_seed(seed):
    _ops.set_random_seed(int(seed))


def _draw(kind, shape, a, b, dtype, seed):
    return _ops.random(kind, list(TensorShape(shape)), float(a), float(b), _dtypes.as_dtype(dtype)._lockstep_dtype,
                       None if seed is None else int(seed))


def uniform(shape, minval=0, maxval=None, dtype=_dtypes.float32, seed=None, name=None):
    return _draw("uniform", shape, minval, 1.0 if maxval is None else maxval, dtype, seed)


def normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    return _draw("normal", shape, mean, stddev, dtype, seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=_dtypes.float32, seed=None, name=None):
    return _draw("truncated", shape, mean, stddev, dtype, seed)
