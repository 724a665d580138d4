"""tf.experimental: extension types (user classes of typed, immutable fields) and API dispatch (a tf.* function
called with such values runs the function registered for their types), as TensorFlow's; RowPartition and
DynamicRaggedShape come from tf.ragged's module.

lockstep runs eagerly, so an extension type is a plain Python object: its fields are checked and converted at
construction (a tf.Tensor field takes anything convert_to_tensor does), it cannot be changed afterwards, and its
Spec describes it for tf.type_spec_from_value. tf.data cannot carry one (its elements are tensors)."""
import inspect as _inspect
import sys as _sys
import typing as _typing

from . import _unimplemented
from .data._optional import Optional  # noqa: F401

__all__ = ["ExtensionType", "BatchableExtensionType", "ExtensionTypeSpec", "dispatch_for_api",
           "dispatch_for_unary_elementwise_apis", "dispatch_for_binary_elementwise_apis", "unregister_dispatch_for"]


def _convert(value, annotation, where):
    """`value` as a field annotated `annotation` holds it, or TypeError naming the field."""
    from . import _core, dtypes
    from ._tensor import Tensor, TensorShape

    origin, args = _typing.get_origin(annotation), _typing.get_args(annotation)
    if annotation is _typing.Any or annotation is _inspect.Parameter.empty:
        return value
    if annotation is Tensor:
        try:
            return _core.convert_to_tensor(value)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{where}: expected a tf.Tensor, got {value!r} ({e})") from None
    if annotation is TensorShape:
        return TensorShape(value)
    if annotation is dtypes.DType:
        return dtypes.as_dtype(value)
    if origin is _typing.Union:
        for option in args:
            try:
                return _convert(value, option, where)
            except TypeError:
                pass
        raise TypeError(f"{where}: expected {annotation}, got {value!r}")
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"{where}: expected a tuple, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        if args and len(args) != len(value):
            raise TypeError(f"{where}: expected a tuple of {len(args)} values, got {len(value)}")
        return tuple(_convert(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args))) if args else tuple(
            value)
    if origin in (dict, _typing.Mapping) or annotation in (dict, _typing.Mapping) or str(origin) == \
            "<class 'collections.abc.Mapping'>":
        if not isinstance(value, _typing.Mapping):
            raise TypeError(f"{where}: expected a mapping, got {value!r}")
        key, item = args if args else (_typing.Any, _typing.Any)
        return _FrozenDict({_convert(k, key, where): _convert(v, item, f"{where}[{k!r}]") for k, v in value.items()})
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(annotation, type):
        if not isinstance(value, annotation):
            raise TypeError(f"{where}: expected {annotation.__name__}, got {type(value).__name__} {value!r}")
        return value
    return value


class _FrozenDict(dict):
    """A Mapping field's value: a dict that cannot change, as the extension type holding it."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("an ExtensionType's Mapping field cannot be changed")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _refuse

    def __hash__(self):
        return hash(tuple(sorted(self.items(), key=repr)))


_MISSING = object()


class ExtensionTypeSpec:
    """The type of an extension value: its class and each field's spec (a TensorSpec for a tensor field, the value
    itself for the others)."""

    def __init__(self, value_type, fields):
        self._value_type, self._fields = value_type, dict(fields)

    value_type = property(lambda self: self._value_type)

    def __getattr__(self, name):
        fields = self.__dict__.get("_fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(name)

    def __eq__(self, other):
        return type(self) is type(other) and self._value_type is other._value_type and self._fields == other._fields

    def __hash__(self):
        return hash((self._value_type, tuple(sorted(self._fields))))

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in self._fields.items())
        return f"{self._value_type.__name__}.Spec({fields})"


class ExtensionType:
    """A user type of typed fields, declared as annotated class attributes (a default is the attribute's value):
    `class MaskedTensor(tf.experimental.ExtensionType): values: tf.Tensor; mask: tf.Tensor`. The constructor takes
    the fields positionally or by name (a custom __init__ sets them itself), converts each to its annotation, then
    calls __validate__ if the class has one; afterwards the value cannot change. == compares every field."""

    _fields = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fields = {}
        for klass in reversed(cls.__mro__):
            if klass in (ExtensionType, object) or not issubclass(klass, ExtensionType):
                continue
            for name, annotation in _typing.get_type_hints(klass).items() if klass.__dict__.get(
                    "__annotations__") else ():
                if name.startswith("_") or _typing.get_origin(annotation) is _typing.ClassVar:
                    continue
                default = klass.__dict__.get(name, fields.get(name, (None, _MISSING))[1])
                fields[name] = (annotation, default)
        cls._fields = fields
        for name, (_, default) in fields.items():  # a default stays reachable through _fields only
            if name in cls.__dict__:
                delattr(cls, name)
        user_init = cls.__dict__.get("__init__")
        cls.__init__ = _constructor(cls, user_init)
        if "Spec" not in cls.__dict__:
            cls.Spec = type("Spec", (ExtensionTypeSpec,), {"__qualname__": f"{cls.__qualname__}.Spec"})

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"Cannot mutate attribute `{name}` outside the custom constructor of ExtensionType.")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        raise AttributeError(f"Cannot mutate attribute `{name}` outside the custom constructor of ExtensionType.")

    @property
    def _type_spec(self):
        from .data._structure import TensorSpec
        from ._tensor import Tensor

        specs = {}
        for name in self._fields:
            value = getattr(self, name)
            specs[name] = (TensorSpec.from_tensor(value) if isinstance(value, Tensor)
                           else getattr(value, "_type_spec", value))
        return type(self).Spec(type(self), specs)

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other):
        from . import _core

        if type(other) is not type(self):
            return _core.constant(False)
        for name in self._fields:
            a, b = getattr(self, name), getattr(other, name)
            if hasattr(a, "numpy") or hasattr(b, "numpy"):
                import numpy as np

                x, y = np.asarray(a.numpy() if hasattr(a, "numpy") else a), np.asarray(
                    b.numpy() if hasattr(b, "numpy") else b)
                if x.shape != y.shape or not np.array_equal(x, y):
                    return _core.constant(False)
            elif bool(a != b) if not isinstance(a, ExtensionType) else not bool(a == b):
                return _core.constant(False)
        return _core.constant(True)

    def __ne__(self, other):
        from . import _core

        return _core.logical_not(self.__eq__(other))

    __hash__ = None


def _constructor(cls, user_init):
    fields = cls._fields
    parameters = [_inspect.Parameter(name, _inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                     default=_inspect.Parameter.empty if default is _MISSING else default)
                  for name, (_, default) in fields.items()]
    try:
        signature = _inspect.Signature(parameters)
    except ValueError:
        raise TypeError(f"{cls.__qualname__}: a field without a default follows one with a default; give the later "
                        "fields defaults too, or reorder them") from None

    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "_frozen", False)
        if user_init is not None:
            user_init(self, *args, **kwargs)
            values = {}
            for name, (_, default) in fields.items():
                if name in self.__dict__:
                    values[name] = self.__dict__[name]
                elif default is not _MISSING:
                    values[name] = default
                else:
                    raise ValueError(f"{cls.__qualname__}.__init__ did not set field `{name}`")
        else:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{cls.__qualname__}: {e}") from None
            bound.apply_defaults()
            values = dict(bound.arguments)
        for name, value in values.items():
            object.__setattr__(self, name, _convert(value, fields[name][0], f"{cls.__qualname__}.{name}"))
        validate = getattr(self, "__validate__", None)
        if validate is not None:
            validate()
        object.__setattr__(self, "_frozen", True)

    __init__.__signature__ = signature if user_init is None else _inspect.signature(user_init)
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


class BatchableExtensionType(ExtensionType):
    """An ExtensionType TensorFlow can batch in tf.data and tf.map_fn; lockstep's datasets carry tensors only, so
    batching one there is refused with that reason."""


# ---- Dispatch: a tf.* function called with values of registered types runs the registered function instead. ----

class _Dispatcher:
    """Stands in for one tf.* function once something is registered for it: each call tries the registered
    targets in order (the first whose annotated parameters all match runs) and falls back to the function."""

    def __init__(self, api, name):
        self._api, self.__name__, self.__doc__ = api, name, getattr(api, "__doc__", None)
        self.__wrapped__ = api
        self._targets = []  # (target, signature, {parameter: type})

    def __call__(self, *args, **kwargs):
        for target, signature, types in self._targets:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                continue
            if all(name in bound.arguments and _matches(bound.arguments[name], t) for name, t in types.items()):
                return target(*args, **kwargs)
        return self._api(*args, **kwargs)


def _matches(value, annotation):
    origin, args = _typing.get_origin(annotation), _typing.get_args(annotation)
    if origin is _typing.Union:
        return any(_matches(value, a) for a in args)
    if origin in (list, tuple) or annotation in (list, tuple):
        return isinstance(value, (list, tuple)) and (not args or all(_matches(v, args[0]) for v in value))
    return isinstance(annotation, type) and isinstance(value, annotation)


def _lockstep_modules():
    return [m for name, m in list(_sys.modules.items()) if (name == "lockstep" or name.startswith("lockstep."))
            and m is not None and not name.startswith("lockstep._lockstep")]


def _root(function):
    """The function under its wrappers: tf.add and tf.math.add wrap one op, and dispatch treats them as one API."""
    while hasattr(function, "__wrapped__"):
        function = function.__wrapped__
    return function


def _dispatcher(api):
    """The dispatcher standing for `api` (and every alias of it) in every lockstep module (made on first use)."""
    root = _root(api)
    found = None
    for module in _lockstep_modules():
        for value in list(vars(module).values()):
            if isinstance(value, _Dispatcher) and _root(value) is root:
                found = value
    if found is None:
        found = _Dispatcher(api, getattr(api, "__name__", "api"))
    replaced = False
    for module in _lockstep_modules():
        for name, value in list(vars(module).items()):
            if not name.startswith("__") and callable(value) and not isinstance(value, type) and _root(value) is root:
                setattr(module, name, found)
                replaced = True
    if not replaced:
        raise ValueError(f"dispatch_for_api: {api!r} is not a lockstep tf.* function; pass one such as tf.math.add")
    return found


def _annotated_types(target, signatures):
    signature = _inspect.signature(target)
    if signatures:
        return signature, [dict(s) for s in signatures]
    hints = _typing.get_type_hints(target)
    types = {name: hints[name] for name in signature.parameters if name in hints and name != "return"}
    if not types:
        raise ValueError(f"dispatch_for_api: {target.__name__} has no annotated parameters; annotate the ones that "
                         "select it (x: MaskedTensor) or pass signatures")
    return signature, [types]


def dispatch_for_api(api, *signatures):
    """Decorator: `@dispatch_for_api(tf.math.add)` on `def masked_add(x: MaskedTensor, y: MaskedTensor, name=None)`
    makes tf.math.add run masked_add when x and y are MaskedTensors."""

    def register(target):
        signature, type_sets = _annotated_types(target, signatures)
        dispatcher = _dispatcher(api)
        for types in type_sets:
            unknown = set(types) - set(signature.parameters)
            if unknown:
                raise ValueError(f"dispatch_for_api: {target.__name__} has no parameter {sorted(unknown)[0]!r}")
            dispatcher._targets.append((target, signature, types))
        return target

    return register


_UNARY = ("abs", "negative", "exp", "log", "sqrt", "rsqrt", "square", "sign", "sigmoid", "tanh", "sin", "cos", "tan",
          "asin", "acos", "atan", "sinh", "cosh", "log1p", "expm1", "erf", "floor", "ceil", "round", "reciprocal",
          "softplus", "is_nan", "is_finite", "is_inf", "logical_not")
_BINARY = ("add", "subtract", "multiply", "divide", "truediv", "floordiv", "pow", "maximum", "minimum", "equal",
           "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
           "squared_difference", "atan2", "floormod", "mod", "divide_no_nan", "multiply_no_nan")


def _elementwise(names, arity, types):
    from . import math

    def register(handler):
        for name in names:
            api = getattr(math, name, None) if name in vars(math) else None
            if api is None:
                continue
            original = api._api if isinstance(api, _Dispatcher) else api

            def target(*args, _api=original, **kwargs):
                return handler(_api, *args[:arity], **kwargs)

            parameters = [_inspect.Parameter(p, _inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in "xy"[:arity]]
            parameters.append(_inspect.Parameter("name", _inspect.Parameter.KEYWORD_ONLY, default=None))
            dispatcher = _dispatcher(api)
            dispatcher._targets.append((target, _inspect.Signature(parameters), dict(zip("xy", types))))
            target._lockstep_handler = handler
        return handler

    return register


def dispatch_for_unary_elementwise_apis(x_type):
    """Decorator of `handler(api_func, x)`: every unary elementwise tf.math function given an `x_type` calls it."""
    return _elementwise(_UNARY, 1, [x_type])


def dispatch_for_binary_elementwise_apis(x_type, y_type):
    """Decorator of `handler(api_func, x, y)`: every binary elementwise tf.math function given an (x_type, y_type)
    pair calls it."""
    return _elementwise(_BINARY, 2, [x_type, y_type])


def unregister_dispatch_for(dispatch_target):
    """Removes everything `dispatch_target` was registered for; ValueError when it was registered for nothing."""
    removed = False
    for module in _lockstep_modules():
        for value in vars(module).values():
            if isinstance(value, _Dispatcher):
                before = len(value._targets)
                value._targets = [t for t in value._targets
                                  if t[0] is not dispatch_target and getattr(t[0], "_lockstep_handler",
                                                                             None) is not dispatch_target]
                removed |= len(value._targets) != before
    if not removed:
        raise ValueError(f"unregister_dispatch_for: {dispatch_target!r} was not registered")


def _getattr(name):
    if name in ("RowPartition", "DynamicRaggedShape"):
        from . import _ragged

        if hasattr(_ragged, name):
            return getattr(_ragged, name)
    return _missing(name)


_unimplemented.install(globals(), "tf.experimental")
_missing = globals().pop("__getattr__")
__getattr__ = _getattr
