"""tf.keras.regularizers: weight penalties (L1, L2, L1L2) with Keras' arguments; a layer adds its penalty to
model.losses, and calling one computes the penalty of a weight."""
from .. import _lockstep, _unimplemented
from . import _config, _registry, _serial


class Regularizer(_config.ConfigObject):
    def __call__(self, x):
        return _lockstep.keras.regularizer(_serial.json.dumps(self._keras_serialized()), x)


_registry.define(globals(), "regularizer", Regularizer)
_ALIASES = _registry.aliases("regularizer")
l1, l2, l1_l2 = L1, L2, L1L2  # noqa: F821 - defined above by _registry.define


def get(identifier):
    if identifier == "l1_l2":  # Keras' get gives 0.01 for both, where L1L2() has 0
        return L1L2(l1=0.01, l2=0.01)  # noqa: F821
    return _config.get("regularizer", globals(), identifier, _ALIASES)


def serialize(regularizer):
    return regularizer._keras_serialized()


def deserialize(config, custom_objects=None):
    return get(config)


_unimplemented.install(globals(), "tf.keras.regularizers")
