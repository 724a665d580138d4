"""tf.keras.backend: the session and value helpers TF programs call."""
import numpy as _np

from .. import _lockstep, _unimplemented

_EPSILON = 1e-7  # keras.backend.epsilon(), which lockstep's losses use (lockstep::keras::losses::kEpsilon)


def clear_session(free_memory=True):
    """Forgets the layer-name counters, so the next Dense is "dense" again."""
    from . import layers

    _lockstep.keras.clear_session()
    layers._name_counts.clear()


def epsilon():
    return _EPSILON


def floatx():
    return "float32"


def image_data_format():
    return "channels_last"


def get_value(x):
    return _np.asarray(x.numpy() if hasattr(x, "numpy") else x)


def set_value(x, value):
    x.assign(value)


def count_params(x):
    return int(_np.prod(x.shape))


_unimplemented.install(globals(), "tf.keras.backend")
