"""tf.keras.losses: the loss classes of lockstep's C++ loss registry with Keras' arguments (reduction included, with
the old tf.keras.losses.Reduction names), Keras' per-example functions, and Loss subclasses written in Python."""
import inspect
import json

from .. import _lockstep, _unimplemented
from . import _registry, _serial

_l = _lockstep.keras.losses


class Reduction:
    """The reductions a loss applies to its per-example values (TF 2's tf.keras.losses.Reduction)."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f'Invalid Reduction Key: {key}. Expected keys are "{cls.all()}"')


def _reduction(value):
    value = "none" if value is None else value
    if value not in Reduction.all():
        raise ValueError(f"Invalid value for argument `reduction`. Expected one of {Reduction.all()}. "
                         f"Received: reduction={value!r}")
    return value


class Loss:
    """tf.keras.losses.Loss. A Python subclass defines call(y_true, y_pred), the per-example losses; the C++ loss
    then weights and reduces them (and compile() trains with it)."""

    _class_name = None
    _signature = None

    def __init__(self, *args, **kwargs):
        if self._class_name is None:  # a subclass written in Python
            _, config = _serial.bind(type(self).__name__, _serial.signature(
                "name=None, reduction='sum_over_batch_size', dtype=None"), args, kwargs)
            name = config["name"] or _snake(type(self).__name__)
            self._cpp = _l.from_function(self.call, _reduction(config["reduction"]), name)
            return
        _, config = _serial.bind(self._class_name, self._signature, args, kwargs)
        config["reduction"] = _reduction(config["reduction"])
        if config.get("dtype") is not None:
            config["dtype"] = _serial.keras_dtype_name(config["dtype"])
        # None is Keras' "not given": the C++ registry fills in its default (and refuses what lockstep lacks).
        config = {k: v for k, v in config.items() if v is not None}
        self._cpp = _l.from_config(self._class_name, _serial.dumps(config))

    @classmethod
    def _wrap(cls, cpp):
        """The Python object of a C++ loss (compile's from a name, or a loaded model's)."""
        klass = globals().get(cpp.class_name)
        obj = (klass if isinstance(klass, type) and issubclass(klass, Loss) else Loss).__new__(Loss)
        obj.__class__ = klass if isinstance(klass, type) and issubclass(klass, Loss) else Loss
        obj._cpp = cpp
        return obj

    def __call__(self, y_true, y_pred, sample_weight=None):
        return self._cpp(y_true, y_pred, sample_weight)

    def call(self, y_true, y_pred):
        return self._cpp.call(y_true, y_pred)

    name = property(lambda self: self._cpp.name)
    reduction = property(lambda self: self._cpp.reduction)

    def get_config(self):
        return json.loads(self._cpp.get_config())

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _snake(name):
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


_registry.define(globals(), "loss", Loss)


# ---- per-example functions (tf.keras.losses.mse, huber, ...), one for each short name of each registered loss
# (its registry aliases, with TF's upper-case spellings MSE, MAE, KLD), taking the class's own arguments. A function
# makes its C++ loss from the arguments and returns the loss's per-example values; compile() takes it by name (its
# _keras_name), so the C++ loss runs it. ----

_SHARED = ("reduction", "name", "dtype")  # what every loss class takes, and no function does


def _per_example_function(class_name, function_name):
    own = [p for p in _registry.signature("loss", class_name).parameters.values() if p.name not in _SHARED]
    sig = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                             for n in ("y_true", "y_pred")] + own)

    def fn(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        y_true, y_pred = bound.arguments.pop("y_true"), bound.arguments.pop("y_pred")
        # Keras takes any truthy from_logits; the C++ table wants a bool where its default is one.
        config = {k: bool(v) if isinstance(sig.parameters[k].default, bool) else v
                  for k, v in bound.arguments.items() if v is not None}
        return _l.from_config(class_name, _serial.dumps(config)).call(y_true, y_pred)

    fn.__name__ = fn.__qualname__ = function_name
    fn.__signature__ = sig
    fn.__doc__ = f"tf.keras.losses.{function_name}: the per-example values of {class_name}."
    fn._keras_name = function_name
    return fn


def _define_per_example_functions(namespace):
    for alias, class_name in _registry.aliases("loss").items():
        namespace[alias] = _per_example_function(class_name, alias)
        if _unimplemented.tf_has("tf.keras.losses", alias.upper()):
            namespace[alias.upper()] = namespace[alias]


_define_per_example_functions(globals())


def get(identifier):
    """Keras' losses.get: a Loss object for a name, a function of ours, a config dict, or a loss object."""
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, dict):
        return globals()[identifier["class_name"]].from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        return Loss._wrap(_l.get(identifier))
    if callable(identifier):
        name = getattr(identifier, "_keras_name", None)
        if name:
            return Loss._wrap(_l.get(name))
        return _from_function(identifier)
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}")


def _from_function(fn):
    obj = Loss.__new__(Loss)
    obj._cpp = _l.from_function(fn, "sum_over_batch_size", getattr(fn, "__name__", "loss"))
    return obj


def serialize(loss):
    return {"class_name": loss._cpp.class_name, "config": loss.get_config()}


def deserialize(config, custom_objects=None):
    return get(config)


_unimplemented.install(globals(), "tf.keras.losses")
