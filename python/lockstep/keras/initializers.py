"""tf.keras.initializers: the classes lockstep's C++ registry has, with Keras' arguments; calling one draws the
values for a weight of a shape."""
from .. import _lockstep, _unimplemented, dtypes as _dtypes
from . import _config, _registry, _serial


class Initializer(_config.ConfigObject):
    def __call__(self, shape, dtype=None, **kwargs):
        dtype = _dtypes.as_dtype(dtype or "float32")._lockstep_dtype
        return _lockstep.keras.initialize(_serial.json.dumps(self._keras_serialized()), [int(d) for d in shape],
                                          dtype)


_registry.define(globals(), "initializer", Initializer)
_ALIASES = _registry.aliases("initializer")
for _alias, _name in _ALIASES.items():
    globals()[_alias] = globals()[_name]
del _alias, _name


def get(identifier):
    return _config.get("initializer", globals(), identifier, _ALIASES)


def serialize(initializer):
    return initializer._keras_serialized()


def deserialize(config, custom_objects=None):
    return get(config)


_unimplemented.install(globals(), "tf.keras.initializers")
