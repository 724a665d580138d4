"""tf.Module and tf.name_scope: a Module finds its variables and submodules by walking its attributes (and the
lists, tuples and dicts they hold, in sorted attribute order, each object once), as TensorFlow's does, and a
checkpoint saves them under their attribute paths. name_scope keeps TensorFlow's scope names ("outer/inner/") per
thread; lockstep's ops have no names, so the scope names only what asks for it (Module.name_scope)."""
import re
import threading
import weakref

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


class _TrackedList(list):
    """A list a Module's attribute holds, as TensorFlow's ListWrapper: what is added to it tells the module, so a
    variable appended after a checkpoint restore takes its saved value at once (TF's deferred restoration)."""

    def __init__(self, items, owner):
        super().__init__(_tracked(item, owner) for item in items)
        self._owner = weakref.ref(owner)

    def _changed(self):
        owner = self._owner()
        if owner is not None:
            owner._restore_deferred()

    def append(self, item):
        super().append(_tracked(item, self._owner()))
        self._changed()

    def extend(self, items):
        super().extend(_tracked(item, self._owner()) for item in items)
        self._changed()

    def insert(self, index, item):
        super().insert(index, _tracked(item, self._owner()))
        self._changed()

    def __setitem__(self, index, item):
        super().__setitem__(index, _tracked(item, self._owner()) if not isinstance(index, slice) else item)
        self._changed()

    def __iadd__(self, items):
        self.extend(items)
        return self

    def __reduce_ex__(self, protocol):
        return list, (list(self),)


class _TrackedDict(dict):
    """A dict a Module's attribute holds: as _TrackedList, for values set under a key."""

    def __init__(self, items, owner):
        super().__init__((k, _tracked(v, owner)) for k, v in items.items())
        self._owner = weakref.ref(owner)

    def __setitem__(self, key, value):
        super().__setitem__(key, _tracked(value, self._owner()))
        owner = self._owner()
        if owner is not None:
            owner._restore_deferred()

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def __reduce_ex__(self, protocol):
        return dict, (dict(self),)


def _tracked(value, owner):
    if owner is None or isinstance(value, (_TrackedList, _TrackedDict)):
        return value
    if type(value) is list:
        return _TrackedList(value, owner)
    if type(value) is dict:
        return _TrackedDict(value, owner)
    return value


def _step(value, part):
    """One step of a checkpoint path ("vs/1") into an attribute, a list index or a dict key; None where it ends."""
    if isinstance(value, dict):
        return value.get(part)
    if isinstance(value, (list, tuple)):
        return value[int(part)] if part.isdigit() and int(part) < len(value) else None
    return getattr(value, part, None) if isinstance(value, Module) else None


def defer_restore(root, path, value, status, entry):
    """Holds a checkpoint value that nothing took at restore (`entry`, at `path` under `root`) on the deepest module
    the path reaches, to be assigned when a variable appears there. False when no module is on the path."""
    owner, rest, at, parts = None, None, root, path.split("/")
    for i in range(len(parts) + 1):
        if isinstance(at, Module):
            owner, rest = at, parts[i:]
        if i == len(parts) or (at := _step(at, parts[i])) is None:
            break
    if owner is None:
        return False
    owner.__dict__.setdefault("_lockstep_deferred", {})["/".join(rest)] = (value, status, entry)
    owner._restore_deferred()
    return True


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
        return sorted((k, v) for k, v in vars(self).items() if k not in ignored and k not in ("_name", "_scope_name", "_lockstep_deferred"))

    def __setattr__(self, name, value):
        object.__setattr__(self, name, _tracked(value, self))
        if self.__dict__.get("_lockstep_deferred"):
            self._restore_deferred()

    def _lockstep_trackable(self):
        """Its variables and submodules under their attribute paths, for tf.train.Checkpoint: found again at every
        save and restore, so what is added later is saved too."""
        module = weakref.ref(self)
        return _lockstep.train.module_trackable(lambda: [] if module() is None else module()._trackable_children())

    def _trackable_children(self):
        from .train import _trackable_of

        children = []
        for key, value in self._module_attributes():
            trackable = _trackable_of(value) if isinstance(value, (Module, _lockstep.Variable, list, tuple, dict)) \
                or hasattr(type(value), "_lockstep_trackable") else None
            if trackable is not None:
                children.append((key, trackable))
        return children

    def _restore_deferred(self):
        """Assigns the held checkpoint values (defer_restore) whose path now reaches a variable, and passes on those
        whose path now reaches a module further down."""
        pending = self.__dict__.get("_lockstep_deferred")
        for path, (value, status, entry) in list((pending or {}).items()):
            target, parts = self, path.split("/")
            while parts and target is not None:
                target = _step(target, parts.pop(0))
                if isinstance(target, Module) and parts:
                    break  # a module further down holds the rest of the path
            if target is None:
                continue
            if parts and isinstance(target, Module):
                del pending[path]
                defer_restore(target, "/".join(parts), value, status, entry)
            elif not parts and _is_variable(target):
                del pending[path]
                target.assign(value)
                status.mark_restored(entry)
                for parent in list(status.unused):  # an object entry ("m/sub") is restored with its last value
                    if entry.startswith(parent + "/") and not any(u.startswith(parent + "/") for u in status.unused):
                        status.mark_restored(parent)

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
