"""What the tf.keras modules share: turning Keras' argument values (initializer, regularizer and activation objects,
tuples, dtypes) into the JSON configs the C++ registries read, binding arguments to Keras' signatures with Keras'
errors, and finding the Python object that stands for a C++ one."""
import inspect
import json
import weakref

import numpy as _np


class UnrecognizedArgumentsError(TypeError, ValueError):
    """Keras 3 raises ValueError for keyword arguments a class does not take, Keras 2 and Python TypeError: this is
    both, so either `except` catches it."""


def signature(text):
    """An inspect.Signature from Keras' parameter list written as Python ("units, activation=None")."""
    return inspect.signature(eval(f"lambda {text}: None", {}))  # noqa: S307 - our own literal tables only


def bind(owner, sig, args, kwargs, extra=()):
    """Keras' arguments of class `owner` (its name, in messages) bound to `sig`, with its defaults applied:
    (given, everything). Keyword arguments neither in `sig` nor in `extra` are Keras' error."""
    rest = next((p.name for p in sig.parameters.values() if p.kind is p.VAR_KEYWORD), None)
    unknown = {k: v for k, v in kwargs.items() if k not in sig.parameters and k not in extra}
    if unknown and rest is None:
        raise UnrecognizedArgumentsError(f"Unrecognized keyword arguments passed to {owner}: {unknown}")
    own = {k: v for k, v in kwargs.items() if k in sig.parameters or (rest and k not in extra)}
    try:
        bound = sig.bind(*args, **own)
    except TypeError as e:
        raise TypeError(f"{owner}(): {e}") from None
    given = dict(bound.arguments)
    given.update(given.pop(rest, {}) if rest else {})
    bound.apply_defaults()
    everything = dict(bound.arguments)
    everything.update(everything.pop(rest, {}) if rest else {})
    return given, everything


def plain(value):
    """A JSON-able form of an argument value: NumPy and tensor scalars become numbers, tuples lists, and objects
    with a Keras config ({"class_name", "config"}) that config."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "_keras_serialized"):
        return value._keras_serialized()
    if hasattr(value, "_lockstep_dtype") and hasattr(value, "name"):  # a tf.DType
        return value.name
    if isinstance(value, (_np.generic, _np.ndarray)) or hasattr(value, "numpy"):
        return _np.asarray(value).item()
    raise TypeError(f"cannot use {value!r} as a Keras argument: lockstep takes numbers, strings, lists and Keras "
                    "objects (initializers, regularizers, schedules) here")


def dumps(config):
    return json.dumps({k: plain(v) for k, v in config.items()})


# The Python object standing for each C++ layer or optimizer a program holds, by the C++ object's address, so that
# model.layers and model.optimizer give back the objects the program made. Weak: an entry goes with its object, and
# the object keeps the C++ one (hence its address) alive until then.
_objects = weakref.WeakValueDictionary()


def remember(obj, cpp):
    _objects[cpp._id()] = obj
    return obj


def known(cpp):
    return _objects.get(cpp._id())


def wrap(cpp, namespace, base, **attributes):
    """The Python object of a C++ object (the one the program made, else a new one of the class `namespace` names
    after its Keras class name, or of `base`), with `attributes` set on a new one."""
    obj = known(cpp)
    if obj is None:
        klass = namespace.get(cpp.class_name)
        klass = klass if isinstance(klass, type) and issubclass(klass, base) else base
        obj = klass.__new__(klass)
        obj._cpp = cpp
        for name, value in attributes.items():
            setattr(obj, name, value)
        remember(obj, cpp)
    return obj


def keras_dtype_name(dtype):
    """A dtype or dtype policy argument as the name Keras' configs hold."""
    if dtype is None:
        return None
    if isinstance(dtype, str):
        return dtype
    if isinstance(getattr(dtype, "name", None), str):  # a tf.DType or a DTypePolicy
        return dtype.name
    return str(_np.dtype(dtype))
