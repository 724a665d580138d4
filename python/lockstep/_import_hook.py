"""The import hook of `python -m lockstep PROGRAM.py`: while it is installed, `import tensorflow`, every
`tensorflow.<module>` (`tensorflow.keras.layers`, `from tensorflow import keras`), `tf_keras` (Keras 2) and `keras`
(Keras 3) resolve to lockstep's modules, so a TensorFlow program runs on lockstep with no line changed. Nothing is
installed by `import lockstep`: a TensorFlow in the same environment stays what `import tensorflow` gives
everywhere else.

A name maps onto lockstep's by its prefix (tensorflow.X -> lockstep.X; tf_keras.X and keras.X -> lockstep.keras.X).
Where lockstep has the name as an attribute rather than a file (tensorflow.keras.optimizers.schedules), the
attribute is the module; a name lockstep lacks is a ModuleNotFoundError that says so."""
import importlib
import importlib.abc
import importlib.machinery
import sys

# The top-level names the hook takes over, and lockstep's module each stands for.
ALIASES = {"tensorflow": "lockstep", "tf_keras": "lockstep.keras", "keras": "lockstep.keras"}


def target(fullname):
    """lockstep's name for module `fullname`, or None when the hook leaves it alone."""
    top, _, rest = fullname.partition(".")
    base = ALIASES.get(top)
    if base is None:
        return None
    return f"{base}.{rest}" if rest else base


def _resolve(name):
    """The module (or module-like object) lockstep has under `name`: its file, else an attribute of its parent."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name != name:  # a module lockstep's own code imports is missing: that is the error to see
            raise
    parent, _, attr = name.rpartition(".")
    holder = _resolve(parent)
    value = getattr(holder, attr, None)
    # A module, or a namespace object standing for one; a function or class is not importable as a module.
    if not isinstance(value, type(sys)) and (value is None or callable(value) or not hasattr(value, "__dict__")):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return value


class _AliasLoader(importlib.abc.Loader):
    """Gives lockstep's module itself, not a copy, so that tensorflow.keras and lockstep.keras are one object."""

    def __init__(self, name):
        self._name = name
        self._spec = None

    def create_module(self, spec):
        try:
            module = _resolve(self._name)
        except ModuleNotFoundError as e:
            if not (e.name or "").startswith("lockstep"):
                raise
            raise ModuleNotFoundError(f"No module named {spec.name!r}: python -m lockstep runs it as {self._name}, "
                                      "which lockstep does not implement (docs/python.md lists what it has)",
                                      name=spec.name) from None
        self._spec = getattr(module, "__spec__", None)
        return module

    def exec_module(self, module):
        # lockstep's module is executed already. The import system has set its __spec__ to the alias's: give it
        # its own back, which its relative imports read.
        if self._spec is not None:
            module.__spec__ = self._spec


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds tensorflow, tf_keras, keras and their submodules as lockstep's."""

    def find_spec(self, fullname, path=None, target_module=None):
        name = target(fullname)
        if name is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(name), is_package=True)


def install():
    """Puts the hook first on sys.meta_path. ImportError when one of its names is imported already (the real
    TensorFlow would then be mixed with lockstep)."""
    loaded = sorted(n for n in sys.modules if target(n) is not None)
    if loaded:
        raise ImportError(f"python -m lockstep: {', '.join(loaded[:3])} is imported already; run the program with "
                          "`python -m lockstep PROGRAM.py` before anything imports TensorFlow or Keras")
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())
