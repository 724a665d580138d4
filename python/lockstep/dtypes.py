"""tf.dtypes: the element types lockstep tensors hold, with TensorFlow's names."""
import numpy as _np

from . import _lockstep


class DType:
    """An element type, as tf.dtypes.DType: compares equal to itself, its name and its NumPy type."""

    def __init__(self, name, enum, numpy_type, floating, integer):
        self._name, self._lockstep_dtype = name, enum
        self._numpy_type, self.is_floating, self.is_integer = numpy_type, floating, integer

    name = property(lambda self: self._name)
    as_numpy_dtype = property(lambda self: self._numpy_type)
    base_dtype = property(lambda self: self)
    is_bool = property(lambda self: self._name == "bool")
    size = property(lambda self: _np.dtype(self._numpy_type).itemsize if self._numpy_type else 2)

    @property
    def min(self):
        return _np.finfo(self._numpy_type).min if self.is_floating else _np.iinfo(self._numpy_type).min

    @property
    def max(self):
        return _np.finfo(self._numpy_type).max if self.is_floating else _np.iinfo(self._numpy_type).max

    def __eq__(self, other):
        if other is None:
            return False
        try:
            return as_dtype(other) is self
        except (TypeError, ValueError):
            return False

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f"tf.{self._name}"

    __str__ = __repr__


_E = _lockstep.DType
float32 = DType("float32", _E.float32, _np.float32, True, False)
float64 = DType("float64", _E.float64, _np.float64, True, False)
bfloat16 = DType("bfloat16", _E.bfloat16, None, True, False)
int32 = DType("int32", _E.int32, _np.int32, False, True)
int64 = DType("int64", _E.int64, _np.int64, False, True)
uint8 = DType("uint8", _E.uint8, _np.uint8, False, True)
bool = DType("bool", _E.bool, _np.bool_, False, False)  # noqa: A001 (TensorFlow's name)
float = float32  # noqa: A001
double = float64
_ALL = {d.name: d for d in (float32, float64, bfloat16, int32, int64, uint8, bool)}
_BY_ENUM = {d._lockstep_dtype: d for d in _ALL.values()}
# tf.string, for tf.data and tf.io only: its values are StringTensors (lockstep.data), never a numeric Tensor; the
# enum it carries is a placeholder that no kernel sees.
string = DType("string", _E.uint8, _np.object_, False, False)


def as_dtype(type_value):
    """The DType for a DType, a name ("float32"), a NumPy dtype or type, or Python's float, int or bool."""
    import builtins

    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, _E):
        return _BY_ENUM[type_value]
    if type_value is builtins.float:
        return float32
    if type_value is builtins.int:
        return int32
    if type_value is builtins.bool:
        return bool
    if isinstance(type_value, str) and type_value in _ALL:
        return _ALL[type_value]
    if isinstance(type_value, str) and type_value in ("float", "half", "double"):
        raise TypeError(f"Cannot convert {type_value!r} to a lockstep DType; use 'float32' or 'float64'")
    try:
        name = _np.dtype(type_value).name
    except TypeError:
        raise TypeError(f"Cannot convert {type_value!r} to a DType") from None
    if name not in _ALL:
        raise TypeError(f"lockstep has no {name} tensors: use float32, float64, bfloat16, int64, int32, uint8 or bool")
    return _ALL[name]

