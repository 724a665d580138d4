"""The C++ registries' classes and parameter tables (lockstep/keras/registry.h), read once from the extension: every
tf.keras class lockstep implements in C++ is generated from them, with a signature made from its table, so that a
class and its arguments are declared in one place. Keras' defaults that are tuples (strides=(1, 1)) come back as
JSON lists and are shown as tuples again."""
import functools
import inspect
import json

from .. import _lockstep


@functools.cache
def tables():
    return json.loads(_lockstep._registry_tables())


def names(kind):
    """The class names of registry `kind` ("layer", "loss", ...), in registration order."""
    return list(tables()[kind])


def aliases(kind):
    """{alias: class name} of registry `kind`: the other names Keras accepts ("adam", "mse")."""
    return {alias: name for name, entry in tables()[kind].items() for alias in entry["aliases"]}


def _default(value):
    return tuple(_default(v) for v in value) if isinstance(value, list) else value


def _parameter(param, kind):
    default = inspect.Parameter.empty if param.get("required") else _default(param["default"])
    return inspect.Parameter(param["name"], kind, default=default)


def signature(kind, class_name):
    """Keras' signature of class `class_name` of registry `kind`, from its table. A layer also takes the keyword
    arguments of every layer (keras.layers.Layer's) that its own table does not list."""
    own = tables()[kind][class_name]["params"]
    params = [_parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in own]
    if kind == "layer":
        taken = {p["name"] for p in own}
        params += [_parameter(p, inspect.Parameter.KEYWORD_ONLY) for p in tables()["layer_base"] if p["name"] not in taken]
    return inspect.Signature(params)


def method_signature(name):
    """Keras' signature of Model.`name` (fit, evaluate, predict), self first, from its C++ table
    (keras/models/training.h)."""
    self = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return inspect.Signature([self] + [_parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                       for p in tables()["model method"][name]])


def define(namespace, kind, base, methods=None, skip=()):
    """A subclass of `base` for each class of registry `kind` (but those in `skip`), put in `namespace` with its
    `_class_name` and generated `_signature`; `methods` adds what one class has beyond the shared ones."""
    for name in names(kind):
        if name in skip:
            continue
        sig = signature(kind, name)
        namespace[name] = type(name, (base,), {
            "_class_name": name, "_signature": sig, "__signature__": sig, "__module__": namespace["__name__"],
            "__doc__": f"tf.keras.{namespace['__name__'].split('keras.')[-1]}.{name}, as lockstep's C++ {kind} "
                       "registry declares it.",
            **(methods or {}).get(name, {})})
