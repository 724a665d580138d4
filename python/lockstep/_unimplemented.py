"""What lockstep does not have says so: a name TensorFlow has (at the version _tf_api.json was recorded from) and
lockstep lacks raises NotImplementedError naming it, at the point of use; any other missing name is an
AttributeError as usual. Each lockstep module mirroring a TF module calls install(globals(), "tf.<module>")."""
import json
import os

with open(os.path.join(os.path.dirname(__file__), "_tf_api.json")) as _f:
    _API = {module: set(names) for module, names in json.load(_f)["modules"].items()}


def message(qualified_name):
    return f"{qualified_name} is not implemented by lockstep (see docs/python.md)"


def tf_has(module, name):
    return name in _API.get(module, ())


def install(namespace, tf_module):
    """Gives a module namespace a __getattr__ that raises NotImplementedError for TensorFlow's names."""

    def __getattr__(name):
        if tf_has(tf_module, name):
            raise NotImplementedError(message(f"{tf_module}.{name}"))
        raise AttributeError(f"module '{namespace['__name__']}' has no attribute '{name}'")

    namespace["__getattr__"] = __getattr__


class Missing:
    """A stand-in for a TensorFlow submodule lockstep does not provide (tf.lite, tf.signal, ...): every attribute
    is NotImplementedError naming it."""

    def __init__(self, tf_module):
        self._tf_module = tf_module

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotImplementedError(message(f"{self._tf_module}.{name}"))

    def __repr__(self):
        return f"<{self._tf_module}: not implemented by lockstep>"
