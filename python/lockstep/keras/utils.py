"""tf.keras.utils: seeding and the array helpers TF programs call."""
import random as _random

import numpy as _np

from .. import _lockstep, _unimplemented, random as _tf_random
from .backend import clear_session  # noqa: F401


def set_random_seed(seed):
    """Seeds Python's and NumPy's generators, tf.random and every lockstep initializer and Dropout made afterwards,
    as Keras' set_random_seed seeds Python, NumPy and TensorFlow."""
    if not isinstance(seed, int):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed} (of type {type(seed)})")
    _random.seed(seed)
    _np.random.seed(seed)
    _tf_random.set_seed(seed)
    _lockstep.keras.set_random_seed(seed)


def to_categorical(x, num_classes=None):
    """One-hot float32 rows for integer class labels, as Keras' to_categorical."""
    x = _np.asarray(x, dtype="int64")
    shape = x.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    x = x.reshape(-1)
    num_classes = int(num_classes or x.max() + 1)
    out = _np.zeros((x.shape[0], num_classes), dtype="float32")
    out[_np.arange(x.shape[0]), x] = 1
    return out.reshape(shape + (num_classes,))


def normalize(x, axis=-1, order=2):
    x = _np.asarray(x)
    norm = _np.atleast_1d(_np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / _np.expand_dims(norm, axis)


_unimplemented.install(globals(), "tf.keras.utils")
