"""tf.keras.losses: the loss classes of lockstep's C++ loss registry with Keras' arguments (reduction included, with
the old tf.keras.losses.Reduction names), Keras' per-example functions, and Loss subclasses written in Python."""
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


# ---- per-example functions; compile() takes them by name (their _keras_name), so the C++ loss runs them ----

def _function(name):
    def wrap(fn):
        fn._keras_name = name
        return fn

    return wrap


@_function("sparse_categorical_crossentropy")
def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    return _l.sparse_categorical_crossentropy(y_true, y_pred, bool(from_logits), 0.0)


@_function("categorical_crossentropy")
def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    return _l.categorical_crossentropy(y_true, y_pred, bool(from_logits), float(label_smoothing))


@_function("binary_crossentropy")
def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    return _l.binary_crossentropy(y_true, y_pred, bool(from_logits), float(label_smoothing))


@_function("mean_squared_error")
def mean_squared_error(y_true, y_pred):
    return _l.mean_squared_error(y_true, y_pred, False, 0.0)


mse = MSE = mean_squared_error


@_function("mean_absolute_error")
def mean_absolute_error(y_true, y_pred):
    return _l.mean_absolute_error(y_true, y_pred, False, 0.0)


mae = MAE = mean_absolute_error


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
