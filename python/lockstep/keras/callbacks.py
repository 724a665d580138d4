"""tf.keras.callbacks: Callback for subclasses written in Python (fit calls the hooks they override, with Keras'
logs, self.model and self.params) and the built-in callbacks, which are lockstep's C++ ones with Keras' arguments."""
import inspect
import os
import types

from .. import _lockstep, _unimplemented
from . import _registry, _serial

_c = _lockstep.keras.callbacks

_HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_train_batch_begin",
          "on_train_batch_end", "on_test_begin", "on_test_end", "on_test_batch_begin", "on_test_batch_end",
          "on_predict_begin", "on_predict_end", "on_predict_batch_begin", "on_predict_batch_end")


class Callback:
    """tf.keras.callbacks.Callback: override the hooks you need; fit/evaluate/predict call only those."""

    def __init__(self):
        self.model = None
        self.params = {}
        self.validation_data = None

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_batch_begin(self, batch, logs=None):
        """TF 2's name for on_train_batch_begin."""

    def on_batch_end(self, batch, logs=None):
        """TF 2's name for on_train_batch_end."""

    def on_epoch_begin(self, epoch, logs=None):
        pass

    def on_epoch_end(self, epoch, logs=None):
        pass

    def on_train_batch_begin(self, batch, logs=None):
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        self.on_batch_end(batch, logs=logs)

    def on_test_batch_begin(self, batch, logs=None):
        pass

    def on_test_batch_end(self, batch, logs=None):
        pass

    def on_predict_batch_begin(self, batch, logs=None):
        pass

    def on_predict_batch_end(self, batch, logs=None):
        pass

    def on_train_begin(self, logs=None):
        pass

    def on_train_end(self, logs=None):
        pass

    def on_test_begin(self, logs=None):
        pass

    def on_test_end(self, logs=None):
        pass

    def on_predict_begin(self, logs=None):
        pass

    def on_predict_end(self, logs=None):
        pass

    def _overridden_hooks(self):
        """The hooks this object's class overrides (on_batch_* count for on_train_batch_*): the only ones worth a
        call from C++, which costs a trip through Python per batch."""
        cls = type(self)
        hooks = [h for h in _HOOKS if getattr(cls, h) is not getattr(Callback, h)]
        for old, new in (("on_batch_begin", "on_train_batch_begin"), ("on_batch_end", "on_train_batch_end")):
            if getattr(cls, old) is not getattr(Callback, old) and new not in hooks:
                hooks.append(new)
        return hooks

    def _cpp_callback(self):
        return _c.PyCallback(self, self._overridden_hooks())


class _Builtin(Callback):
    """A callback that is lockstep's C++ one."""

    _cpp = None

    def _cpp_callback(self):
        return self._cpp


# History, LearningRateScheduler, LambdaCallback and CallbackList stay in Python: the two in the middle take Python
# functions, which no config can hold; fit records History in C++ and fills the Python object at the end; CallbackList
# only calls other callbacks' hooks. Every other built-in callback is generated from the C++ registry
# (_RegistryCallback).
class History(Callback):
    """Every epoch's logs (fit returns it): history maps each log name to its values by epoch."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def _fill(self, epochs, history, model, params):
        self.epoch, self.history, self.model, self.params = list(epochs), history, model, params

    def _cpp_callback(self):
        return None  # fit records History itself and fills this object at the end


def _takes_lr(schedule):
    try:
        params = [p for p in inspect.signature(schedule).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    except (TypeError, ValueError):
        return True
    return len(params) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


class LearningRateScheduler(_Builtin):
    """Sets the learning rate at each epoch's start to schedule(epoch, lr) (or schedule(epoch))."""

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        two = _takes_lr(schedule)
        self._cpp = _c.LearningRateScheduler(
            lambda epoch, lr: float(schedule(epoch, lr) if two else schedule(epoch)), int(verbose))


class _RegistryCallback(_Builtin):
    """A callback of lockstep's C++ callback registry: its Keras arguments (kept as attributes, as Keras keeps
    them) become the config the registry makes it from."""

    _class_name = None
    _signature = None

    def __init__(self, *args, **kwargs):
        super().__init__()
        _, config = _serial.bind(self._class_name, self._signature, args, kwargs)
        # Paths (filepath, backup_dir, log_dir, filename) may be os.PathLike; Keras keeps them as strings.
        config = {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in config.items()}
        for key, value in config.items():
            setattr(self, key, value)
        config = {k: v for k, v in config.items() if v is not None}
        self._cpp = _lockstep._callback_from_config(self._class_name, _serial.dumps(config))


_registry.define(globals(), "callback", _RegistryCallback)


class LambdaCallback(Callback):
    """A callback of the functions given for its hooks."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        super().__init__()
        given = dict(on_epoch_begin=on_epoch_begin, on_epoch_end=on_epoch_end, on_train_begin=on_train_begin,
                     on_train_end=on_train_end, on_train_batch_begin=on_train_batch_begin,
                     on_train_batch_end=on_train_batch_end, **kwargs)
        for old, new in (("on_batch_begin", "on_train_batch_begin"), ("on_batch_end", "on_train_batch_end")):
            if given.get(old):
                given[new] = given.pop(old)
        unknown = [k for k in given if k not in _HOOKS]
        if unknown:
            raise TypeError(f"LambdaCallback got unknown hooks: {unknown}")
        self._functions = {k: f for k, f in given.items() if f is not None}
        for hook, fn in self._functions.items():
            setattr(self, hook, fn)

    def _overridden_hooks(self):
        return list(self._functions)


class CallbackList:
    """Keras' CallbackList: calls each callback's hook in order (for custom loops that drive callbacks)."""

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None, **params):
        self.callbacks = list(callbacks or [])
        if add_history:
            self.callbacks.append(History())
        for c in self.callbacks:
            if model is not None:
                c.set_model(model)
            c.set_params(params)

    def __getattr__(self, hook):
        if hook not in _HOOKS:
            raise AttributeError(hook)

        def call(*args, **kwargs):
            for c in self.callbacks:
                getattr(c, hook)(*args, **kwargs)

        return call


experimental = types.SimpleNamespace(BackupAndRestore=BackupAndRestore)

_unimplemented.install(globals(), "tf.keras.callbacks")
