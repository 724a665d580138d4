"""Keras objects that are their config (initializers, regularizers, learning-rate schedules): made from Keras'
arguments, serialised as {"class_name", "config"} for the C++ registry that builds the real object."""
from . import _serial


class ConfigObject:
    """Base of the classes _registry.define makes; `_signature` is Keras' signature of the class."""

    _class_name = None
    _signature = None

    def __init__(self, *args, **kwargs):
        if self._class_name is None:
            raise NotImplementedError(f"subclassing {type(self).__name__} in Python is not implemented by lockstep "
                                      "(see docs/python.md): use its built-in classes")
        _, self._config = _serial.bind(self._class_name, self._signature, args, kwargs)

    def get_config(self):
        return dict(self._config)

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def _keras_serialized(self):
        return {"class_name": self._class_name, "config": _serial.plain(self._config)}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._config.items())
        return f"<{self._class_name}({args})>"


def get(kind, namespace, identifier, aliases):
    """Keras' get(identifier) for `kind`: an object as it is, a name (class name or alias) as that class with its
    defaults, a {"class_name", "config"} dict through from_config."""
    if identifier is None or isinstance(identifier, ConfigObject):
        return identifier
    if isinstance(identifier, dict):
        cls = namespace.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Could not interpret {kind} identifier: {identifier}")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        cls = namespace.get(aliases.get(identifier, identifier))
        if isinstance(cls, type) and issubclass(cls, ConfigObject):
            return cls()
    raise ValueError(f"Could not interpret {kind} identifier: {identifier!r}")
