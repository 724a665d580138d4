"""tf.keras.activations: the activation functions lockstep's C++ registry has, by Keras' names; layers take them
by name or as these functions."""
from .. import _lockstep, _unimplemented

_k = _lockstep.keras


def _activation(name):
    def activation(x):
        return _k.activation(name, x)

    activation.__name__ = activation.__qualname__ = name
    activation._keras_name = name
    return activation


for _name in _k.activation_names():
    globals()[_name] = _activation(_name)
del _name


def softmax(x, axis=-1):  # noqa: F811 - Keras' softmax takes an axis
    return _lockstep.ops.softmax(x, int(axis))


softmax._keras_name = "softmax"


def get(identifier):
    """The activation function `identifier` names; None is linear."""
    if identifier is None:
        return globals()["linear"]
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _k.activation_names():
        return globals()[identifier]
    raise ValueError(f"Could not interpret activation function identifier: {identifier!r} "
                     f"(lockstep has {', '.join(_k.activation_names())})")


def serialize(activation):
    return name_of(activation)


def deserialize(name, custom_objects=None):
    return get(name)


def name_of(activation):
    """The registry name of an activation argument: a name, one of these functions, or a tf.nn function of the
    same name; anything else is a ValueError, since the C++ layers run their activation themselves."""
    if activation is None:
        return "linear"
    if isinstance(activation, str):
        return activation
    name = getattr(activation, "_keras_name", None) or getattr(activation, "__name__", None)
    if name in _k.activation_names():
        return name
    raise ValueError(f"activation {activation!r} is not one lockstep's layers can run: use one of "
                     f"{', '.join(repr(n) for n in _k.activation_names())} (or an Activation layer)")


_unimplemented.install(globals(), "tf.keras.activations")
