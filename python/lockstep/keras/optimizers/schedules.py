"""tf.keras.optimizers.schedules: the learning-rate schedules of lockstep's C++ schedule registry with Keras'
arguments; an optimizer given one evaluates it at its own step."""
from ... import _lockstep, _unimplemented
from .. import _config, _registry, _serial

_o = _lockstep.keras.optimizers


class LearningRateSchedule(_config.ConfigObject):
    """A learning rate as a function of the optimizer's step. lockstep's classes below are C++ schedules; a subclass
    written in Python defines __call__(step) (and get_config), which the optimizer calls at each step."""

    def __init__(self, *args, **kwargs):
        if self._class_name is not None:
            super().__init__(*args, **kwargs)

    def get_config(self):
        if self._class_name is None:
            raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override `get_config()` "
                                      "in order to be serializable.")
        return super().get_config()

    def __call__(self, step):
        if not hasattr(self, "_cpp"):
            self._cpp = _o.schedule_from_config(self._class_name, _serial.dumps(self._config))
        return _lockstep.ops.convert_to_tensor(float(self._cpp(int(step))), "float32", None)


_registry.define(globals(), "learning-rate schedule", LearningRateSchedule)


def serialize(schedule):
    return schedule._keras_serialized()


def deserialize(config, custom_objects=None):
    return _config.get("schedule", globals(), config, {})


_unimplemented.install(globals(), "tf.keras.optimizers.schedules")
