"""tf.keras.metrics: the metric classes of lockstep's C++ metric registry with Keras' arguments — update_state,
result, reset_state (and TF 2's reset_states), callable — Keras' per-sample functions, and MeanMetricWrapper over a
Python function. A metric made in a strategy's scope sums over the replicas (and workers) when read."""
import json

from .. import _lockstep, _unimplemented
from . import _registry, _serial

_m = _lockstep.keras.metrics


class Metric:
    """tf.keras.metrics.Metric over a C++ metric."""

    _class_name = None
    _signature = None

    def __init__(self, *args, **kwargs):
        if self._class_name is None:  # a subclass written in Python: its own update_state and result
            _, config = _serial.bind(type(self).__name__, _serial.signature("name=None, dtype=None"), args, kwargs)
            self._cpp, self._name, self._variables = None, config["name"] or _snake(type(self).__name__), []
            return
        _, config = _serial.bind(self._class_name, self._signature, args, kwargs)
        if config.get("dtype") is not None:
            config["dtype"] = _serial.keras_dtype_name(config["dtype"])
        # None is Keras' "not given": the C++ registry fills in its default (and refuses what lockstep lacks).
        config = {k: v for k, v in config.items() if v is not None}
        self._cpp = _m.from_config(self._class_name, _serial.dumps(config))

    def _lockstep_trackable(self):
        """Its accumulators, for tf.train.Checkpoint(metric=...): each worker's own."""
        if self._cpp is None:
            raise ValueError(f"the metric {self._name} is written in Python: lockstep cannot checkpoint its "
                             "variables yet; checkpoint its result yourself, or use one of lockstep's metrics")
        return self._cpp._lockstep_trackable()

    @classmethod
    def _wrap(cls, cpp):
        klass = globals().get(cpp.class_name)
        klass = klass if isinstance(klass, type) and issubclass(klass, Metric) else Metric
        obj = klass.__new__(klass)
        obj._cpp = cpp
        return obj

    def add_weight(self, name=None, shape=(), dtype=None, initializer="zeros", aggregation="sum",
                   synchronization="on_read"):
        """A metric variable of a Python subclass (Keras' Metric.add_weight), zeroed by reset_state."""
        from .. import Variable
        from . import initializers

        value = initializers.get(initializer)(tuple(shape), dtype=dtype or "float32")
        variable = Variable(value, trainable=False, name=f"{self.name}/{name or 'variable'}")
        self._variables.append((variable, value))
        return variable

    @property
    def variables(self):
        return [v for v, _ in self._variables] if self._cpp is None else []

    def update_state(self, *args, **kwargs):
        if self._cpp is None:
            raise NotImplementedError(f"Metric {type(self).__name__} does not implement update_state()")
        if self._cpp.takes_values():
            values = kwargs.pop("values", args[0] if args else None)
            sample_weight = kwargs.pop("sample_weight", args[1] if len(args) > 1 else None)
            self._cpp.update_values(values, sample_weight)
        else:
            y_true = kwargs.pop("y_true", args[0] if args else None)
            y_pred = kwargs.pop("y_pred", args[1] if len(args) > 1 else None)
            sample_weight = kwargs.pop("sample_weight", args[2] if len(args) > 2 else None)
            self._cpp.update_state(y_true, y_pred, sample_weight)

    def result(self):
        if self._cpp is None:
            raise NotImplementedError(f"Metric {type(self).__name__} does not implement result()")
        return _lockstep.ops.convert_to_tensor(float(self._cpp.result()), _lockstep.DType.float32, None)

    def reset_state(self):
        if self._cpp is None:
            for variable, initial in self._variables:
                variable.assign(initial)
            return
        self._cpp.reset_state()

    reset_states = reset_state

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    name = property(lambda self: self._name if self._cpp is None else self._cpp.name)
    dtype = property(lambda self: "float32")

    def get_config(self):
        if self._cpp is None:
            return {"name": self.name, "dtype": "float32"}
        return json.loads(self._cpp.get_config())

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


def _snake(name):
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(name))


_registry.define(globals(), "metric", Metric)


class MeanMetricWrapper(Metric):
    """The mean of fn(y_true, y_pred) over every sample seen (Keras' MeanMetricWrapper); fn may be a Python
    function of tensors."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        if kwargs:
            raise NotImplementedError(f"MeanMetricWrapper: extra arguments of fn ({kwargs}) are not implemented by "
                                      "lockstep; bind them with functools.partial")
        self._cpp = _m.from_function(fn, name or getattr(fn, "__name__", "mean_metric_wrapper"))


# ---- per-sample functions; compile(metrics=...) takes them by name (their _keras_name) ----

def _function(name, fn):
    fn._keras_name = fn.__name__ = name
    return fn


accuracy = _function("accuracy", lambda y_true, y_pred: _m.accuracy(y_true, y_pred))
sparse_categorical_accuracy = _function("sparse_categorical_accuracy",
                                        lambda y_true, y_pred: _m.sparse_categorical_accuracy(y_true, y_pred))
categorical_accuracy = _function("categorical_accuracy",
                                 lambda y_true, y_pred: _m.categorical_accuracy(y_true, y_pred))
binary_accuracy = _function("binary_accuracy", lambda y_true, y_pred, threshold=0.5:
                            _m.binary_accuracy(y_true, y_pred, float(threshold)))


def get(identifier):
    """A metric object for a registry name or class name, one of our functions, or a metric object."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        cls = globals().get(identifier)
        if isinstance(cls, type) and issubclass(cls, Metric) and cls._class_name:
            return cls()
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")


def _compile_argument(metric):
    """What Model.compile passes to C++ for one entry of metrics=: a name (resolved there against the loss, as
    Keras resolves "accuracy") or a C++ metric."""
    if isinstance(metric, str):
        return metric
    if isinstance(metric, Metric):
        if metric._cpp is None:
            raise NotImplementedError(
                f"a Metric subclass written in Python ({type(metric).__name__}) in compile() is not implemented by "
                "lockstep (see docs/python.md): fit's metrics are summed over replicas and workers in C++; use it "
                "in a custom loop, or pass a function (MeanMetricWrapper)")
        return metric._cpp
    name = getattr(metric, "_keras_name", None)
    if name:
        return name
    if callable(metric):
        return MeanMetricWrapper(metric)._cpp
    raise ValueError(f"Could not interpret metric identifier: {metric!r}")


def serialize(metric):
    return {"class_name": metric._cpp.class_name, "config": metric.get_config()}


_unimplemented.install(globals(), "tf.keras.metrics")
