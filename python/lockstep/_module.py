"""tf.Module and tf.name_scope: a Module finds its variables and submodules by walking its attributes (and the
lists, tuples and dicts they hold, in sorted attribute order, each object once), as TensorFlow's does, and a
checkpoint saves them under their attribute paths. name_scope keeps TensorFlow's scope names ("outer/inner/") per
thread; lockstep's ops have no names, so the scope names only what asks for it (Module.name_scope)."""
import re
import threading

from . import _lockstep

_VALID_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-/]*$")
_scopes = threading.local()


def _current_scope():
    return getattr(_scopes, "name", "")


class name_scope:  # noqa: N801 (TensorFlow's name)
    """tf.name_scope(name): entering gives the scope's full name, "outer/name/"; a name ending in "/" is taken as a
    full name, as TensorFlow does."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"name_scope: name must be a string, got {name!r}")
        if name and not _VALID_NAME.match(name.rstrip("/")):
            raise ValueError(f"'{name}' is not a valid scope name: use letters, digits, '_', '.', '-' and '/', "
                             "starting with a letter or '_'")
        self._name = name
        self._saved = None

    @property
    def name(self):
        return self._name

    def __enter__(self):
        self._saved = _current_scope()
        if not self._name:
            full = ""
        elif self._name.endswith("/"):
            full = self._name
        else:
            full = f"{self._saved}{self._name}/"
        _scopes.name = full
        return full

    def __exit__(self, *exc):
        _scopes.name = self._saved
        return False


def _snake(name):
    out = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z\d])([A-Z])", r"\1_\2", out).lower()


def _is_variable(value):
    return isinstance(value, _lockstep.Variable)


def _identity(value):
    """What makes two values one: a Variable's own id (the Python objects over one C++ Variable differ), else the
    object's."""
    return ("variable", value._unique_id()) if _is_variable(value) else id(value)


class Module:
    """tf.Module: a container of variables, other modules and functions on them. `variables`,
    `trainable_variables` and `submodules` are found from its attributes; tf.train.Checkpoint(module=m) saves and
    restores its variables under their attribute paths."""

    # Attributes the walk leaves out (TensorFlow's hook for subclasses).
    _TF_MODULE_IGNORED_PROPERTIES = frozenset()

    def __init__(self, name=None):
        if name is None:
            name = _snake(type(self).__name__)
        elif not isinstance(name, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid Python identifiers "
                             "(e.g. a valid class name).")
        self._name = name
        with name_scope(name) as scope:
            self._scope_name = scope

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        """The module's scope: `with self.name_scope:` (with_name_scope enters it around a method)."""
        return name_scope(self.__dict__.get("_scope_name") or f"{self.name}/")

    @property
    def variables(self):
        return tuple(self._flatten(predicate=_is_variable, expand_composites=True))

    @property
    def trainable_variables(self):
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and v.trainable, expand_composites=True))

    @property
    def non_trainable_variables(self):
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and not v.trainable, expand_composites=True))

    @property
    def submodules(self):
        return tuple(self._flatten(predicate=lambda v: isinstance(v, Module)))

    def _flatten(self, recursive=True, predicate=None, attribute_name=None, with_path=False,
                 expand_composites=False):
        """Every value in this module's attributes that `predicate` accepts, each once, as TensorFlow orders them:
        the module's own attributes by name (into lists, tuples and dicts, by key), then, when recursive, each
        submodule met there in the same way; with_path, as (path, value) with path a tuple of attribute names, keys
        and indices."""
        predicate = predicate or (lambda _: True)
        seen = {_identity(self)}
        out = []

        def leaves(value, path):
            if isinstance(value, dict):
                for key in sorted(value, key=str):
                    yield from leaves(value[key], path + (key,))
            elif isinstance(value, (list, tuple)) and not isinstance(value, Module):
                for i, item in enumerate(value):
                    yield from leaves(item, path + (i,))
            else:
                yield path, value

        def walk(module, prefix, names):
            submodules = []
            for key, value in module._module_attributes(names):
                for path, leaf in leaves(value, prefix + (key,)):
                    if _identity(leaf) in seen:
                        continue
                    seen.add(_identity(leaf))
                    if predicate(leaf):
                        out.append((path, leaf))
                    if recursive and isinstance(leaf, Module):
                        submodules.append((path, leaf))
            for path, submodule in submodules:
                walk(submodule, path, None)

        walk(self, (), attribute_name)
        return out if with_path else [v for _, v in out]

    def _module_attributes(self, attribute_name=None):
        """(name, value) of the attributes the walk looks into, sorted by name."""
        if attribute_name is not None:
            return [(attribute_name, getattr(self, attribute_name))] if hasattr(self, attribute_name) else []
        ignored = self._TF_MODULE_IGNORED_PROPERTIES
        return sorted((k, v) for k, v in vars(self).items() if k not in ignored and k not in ("_name", "_scope_name"))

    def _lockstep_trackable(self):
        """Its variables and submodules under their attribute paths, for tf.train.Checkpoint."""
        from .train import _trackable_of

        children = []
        for key, value in self._module_attributes():
            trackable = _trackable_of(value) if isinstance(value, (Module, _lockstep.Variable, list, tuple, dict)) \
                or hasattr(type(value), "_lockstep_trackable") else None
            if trackable is not None:
                children.append((key, trackable))
        return _lockstep.train.nested_trackable(children)

    @classmethod
    def with_name_scope(cls, method):
        """A decorator: the method runs inside its module's name_scope."""
        import functools

        @functools.wraps(method)
        def scoped(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)

        return scoped

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object at {id(self):#x}>"
