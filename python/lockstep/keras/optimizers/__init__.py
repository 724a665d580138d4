"""tf.keras.optimizers: the optimizers of lockstep's C++ optimizer registry (SGD, RMSprop, Adam, AdamW, Adagrad)
with Keras' arguments. learning_rate and iterations read like Keras' variables (.numpy(), .assign(), arithmetic);
apply_gradients runs the C++ update (all-reduced across replicas inside strategy.run)."""
import json

import numpy as _np

from ... import _lockstep, _unimplemented, dtypes as _dtypes
from ..._tensor import TensorShape
from .. import _registry, _serial
from . import schedules
from .schedules import LearningRateSchedule

_o = _lockstep.keras.optimizers


class _OptimizerValue:
    """An optimizer's learning_rate or iterations as Keras shows them, a variable: numpy(), assign(), float(), and
    a tensor wherever one is taken (arithmetic, tf.* functions). It reads the C++ optimizer each time."""

    def __init__(self, optimizer, attribute, dtype, name):
        self._optimizer, self._attribute, self._np_dtype, self._name = optimizer, attribute, dtype, name

    def _value(self):
        return getattr(self._optimizer._cpp, self._attribute)

    def numpy(self):
        return _np.array(self._value(), dtype=self._np_dtype)

    def _lockstep_tensor_(self):
        return _lockstep.ops.convert_to_tensor(self.numpy(), None, None)

    def value(self):
        return self._lockstep_tensor_()

    read_value = value

    def assign(self, value, read_value=True):
        if self._attribute != "learning_rate":
            raise NotImplementedError("assigning to optimizer.iterations is not implemented by lockstep")
        self._optimizer._cpp.learning_rate = float(_np.asarray(value))
        return self if read_value else None

    def __float__(self):
        return float(self._value())

    def __int__(self):
        return int(self._value())

    def __array__(self, dtype=None, copy=None):
        return self.numpy() if dtype is None else self.numpy().astype(dtype)

    dtype = property(lambda self: _dtypes.as_dtype(self._np_dtype))
    shape = property(lambda self: TensorShape([]))
    name = property(lambda self: self._name)

    def __repr__(self):
        return f"<tf.Variable '{self._name}:0' shape=() dtype={_np.dtype(self._np_dtype).name}, numpy={self.numpy()}>"

    def __format__(self, spec):
        return format(self.numpy().item(), spec)


# Arithmetic and comparisons as on the tensor of the current value.
for _op in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
            "__pow__", "__rpow__", "__neg__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(_OptimizerValue, _op, (lambda op: lambda self, *other: getattr(self._lockstep_tensor_(), op)(*other))(_op))
del _op


class Optimizer:
    """tf.keras.optimizers.Optimizer over a C++ optimizer."""

    _class_name = None
    _signature = None

    def __init__(self, *args, **kwargs):
        if self._class_name is None:
            raise NotImplementedError(f"subclassing tf.keras.optimizers.Optimizer in Python "
                                      f"({type(self).__name__}) is not implemented by lockstep (see docs/python.md)")
        kwargs = dict(kwargs)
        if "lr" in kwargs:  # TF 2's name
            kwargs["learning_rate"] = kwargs.pop("lr")
        if kwargs.get("decay", 0) == 0:  # TF 2's decay argument, whose 0 means none; another value is refused
            kwargs.pop("decay", None)
        _, config = _serial.bind(self._class_name, self._signature, args, kwargs)
        # None is Keras' "not given": the C++ registry fills in its default (and refuses what lockstep lacks).
        config = {k: v for k, v in config.items() if v is not None}
        lr = config["learning_rate"]
        python_schedule = callable(lr) and not (isinstance(lr, LearningRateSchedule) and lr._class_name)
        if python_schedule:
            config["learning_rate"] = 0.0  # replaced by the schedule below
        elif not isinstance(lr, LearningRateSchedule):
            config["learning_rate"] = float(_np.asarray(lr))
        self._cpp = _o.from_config(self._class_name, _serial.dumps(config))
        if python_schedule:
            # A LearningRateSchedule subclass takes the step; Keras' other callables take nothing.
            self._cpp.set_python_schedule(lr if isinstance(lr, LearningRateSchedule) else (lambda step: lr()))
        _serial.remember(self, self._cpp)

    @classmethod
    def _wrap(cls, cpp):
        return _serial.wrap(cpp, globals(), Optimizer)

    @property
    def learning_rate(self):
        return _OptimizerValue(self, "learning_rate", _np.float32, "learning_rate")

    @learning_rate.setter
    def learning_rate(self, value):
        if isinstance(value, LearningRateSchedule) or callable(value):
            raise NotImplementedError("replacing an optimizer's learning rate by a schedule is not implemented by "
                                      "lockstep: pass the schedule when making the optimizer")
        self._cpp.learning_rate = float(_np.asarray(value))

    lr = learning_rate

    @property
    def iterations(self):
        return _OptimizerValue(self, "iterations", _np.int64, "iteration")

    name = property(lambda self: self._cpp.name)

    def apply_gradients(self, grads_and_vars, name=None, skip_gradients_aggregation=False, **kwargs):
        pairs = list(grads_and_vars)
        self._cpp.apply_gradients([g for g, _ in pairs], [v for _, v in pairs])
        return self.iterations

    def apply(self, grads, trainable_variables=None):
        return self.apply_gradients(zip(grads, trainable_variables))

    def build(self, var_list):
        self._cpp.build(list(var_list))

    def minimize(self, loss, var_list, tape=None):
        from ..._autodiff import GradientTape

        if tape is None:
            if not callable(loss):
                raise ValueError("`tape` is required when a `Tensor` loss is passed.")
            with GradientTape() as tape:
                loss = loss()
        var_list = list(var_list() if callable(var_list) else var_list)
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def get_config(self):
        config = json.loads(self._cpp.get_config())
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        lr = config.get("learning_rate")
        if isinstance(lr, dict):
            config["learning_rate"] = schedules.deserialize(lr)
        return cls(**config)

    def _lockstep_trackable(self):
        return self._cpp._lockstep_trackable()

    def __repr__(self):
        return f"<keras.optimizers.{type(self).__name__} name={self.name}>"


_registry.define(globals(), "optimizer", Optimizer)


def get(identifier):
    """An optimizer object for a name ("adam"), a config dict or an optimizer."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return globals()[identifier["class_name"]].from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        for name in _o.names():
            if name.lower() == identifier.lower():
                return globals()[name]()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r} "
                     f"(lockstep has {', '.join(repr(n.lower()) for n in _o.names())})")


def serialize(optimizer):
    return {"class_name": optimizer._cpp.class_name, "config": optimizer.get_config()}


def deserialize(config, custom_objects=None):
    return get(config)


_unimplemented.install(globals(), "tf.keras.optimizers")
