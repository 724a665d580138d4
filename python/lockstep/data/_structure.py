"""tf.data's nested elements on the Python side: their TensorSpecs, tf.string's StringTensor, and the nest helpers.

An element's structure is a nest of tuples, namedtuples and dicts (dicts in sorted key order, as tf.nest) whose
leaves are TensorSpecs; lists are tensors, as in tf.data. The C++ pipeline carries the same nest
(lockstep::data::Element, with StringTensor leaves for tf.string); the binding hands it over as tuples, dicts,
Tensors and StringTensors, and Structure gives it back TensorFlow's namedtuples and checks what map functions return.
"""
import numpy as _np

from .. import _lockstep, dtypes
from .._tensor import Tensor, TensorShape

string = dtypes.string


class TensorSpec:
    """The type of one component of an element, as tf.TensorSpec: a shape (None where unknown) and a dtype."""

    def __init__(self, shape, dtype=dtypes.float32, name=None):
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype)
        self._name = name

    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    def is_compatible_with(self, spec_or_value):
        other = spec_or_value if isinstance(spec_or_value, TensorSpec) else TensorSpec.from_tensor(spec_or_value)
        if other.dtype != self.dtype or other.shape.rank != self.shape.rank:
            return False
        return all(a is None or b is None or a == b for a, b in zip(self.shape, other.shape))

    def _with_shape(self, shape):
        return TensorSpec(shape, self._dtype, self._name)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self._shape == other._shape and self._dtype == other._dtype
                and self._name == other._name)

    def __hash__(self):
        return hash((self._shape, self._dtype))

    def __repr__(self):
        return f"TensorSpec(shape={self._shape}, dtype={self._dtype!r}, name={self._name!r})"


class StringTensor:
    """A tf.string tensor: byte strings in an array of the tensor's shape. numpy() gives bytes for a scalar and an
    object array of bytes otherwise, as TensorFlow does."""

    _lockstep_leaf = True

    def __init__(self, values):
        self._values = _np.asarray(values, dtype=object)

    @classmethod
    def _from_cpp(cls, shape, values):
        """A string leaf of the C++ pipeline (data::StringTensor): its shape and its bytes in row-major order."""
        array = _np.empty(len(values), dtype=object)
        array[:] = values
        return cls(array.reshape(shape))

    def _cpp_parts(self):
        """(shape, bytes in row-major order), what the binding makes a data::StringTensor of."""
        return (tuple(self._values.shape),
                [v.encode() if isinstance(v, str) else bytes(v) for v in self._values.reshape(-1)])

    dtype = property(lambda self: string)
    shape = property(lambda self: TensorShape(self._values.shape))
    ndim = property(lambda self: self._values.ndim)

    def numpy(self):
        return self._values[()] if self._values.ndim == 0 else self._values.copy()

    def get_shape(self):
        return self.shape

    def __len__(self):
        if self._values.ndim == 0:
            raise TypeError("len() of a scalar string tensor")
        return len(self._values)

    def __getitem__(self, key):
        return StringTensor(self._values[key])

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __eq__(self, other):
        other = other._values if isinstance(other, StringTensor) else _np.asarray(other, dtype=object)
        return bool(_np.all(self._values == other)) if self._values.ndim == 0 else self._values == other

    __hash__ = None

    def __bytes__(self):
        return bytes(self._values[()])

    def __repr__(self):
        return f"<tf.Tensor: shape={self.shape}, dtype=string, numpy={self.numpy()!r}>"


def is_string(value):
    if isinstance(value, (StringTensor, bytes, str)):
        return True
    return isinstance(value, _np.ndarray) and value.dtype.kind in "SUO"


def is_structure(value):
    """tf.data's nests: tuples (and namedtuples) and dicts. Lists are tensors, as in tf.data."""
    return isinstance(value, (tuple, dict))


def flatten(value):
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in flatten(value[k])]
    if isinstance(value, tuple):
        return [leaf for item in value for leaf in flatten(item)]
    return [value]


def flatten_up_to(shallow, value):
    """The parts of `value` at the leaves of `shallow` (output_shapes against output_types)."""
    if isinstance(shallow, dict):
        return [p for k in sorted(shallow) for p in flatten_up_to(shallow[k], value[k])]
    if isinstance(shallow, tuple):
        return [p for s, v in zip(shallow, value) for p in flatten_up_to(s, v)]
    return [value]


def pack_as(tree, leaves):
    it = iter(leaves)

    def build(s):
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        if isinstance(s, tuple) and hasattr(s, "_fields"):
            return type(s)(*[build(v) for v in s])
        if isinstance(s, tuple):
            return tuple(build(v) for v in s)
        return next(it)

    return build(tree)


def paths(tree, prefix=""):
    """Names of the leaves for error messages: "[0]", "['image']", ..."""
    if isinstance(tree, dict):
        return [p for k in sorted(tree) for p in paths(tree[k], f"{prefix}[{k!r}]")]
    if isinstance(tree, tuple):
        return [p for i, v in enumerate(tree) for p in paths(v, f"{prefix}[{i}]")]
    return [prefix or "the element"]


def normalized(value, where="an element"):
    """A list or array-like (a pandas Series) of strings as a NumPy array, so that it reads as a string tensor;
    anything else as it is (numbers keep TensorFlow's conversion rules)."""
    if isinstance(value, list) or (not isinstance(value, (Tensor, _np.ndarray, StringTensor, _np.generic))
                                   and hasattr(value, "__array__") and not hasattr(value, "_lockstep_tensor_")):
        array = _np.asarray(value)
        if array.dtype.kind in "US":
            return array
        if array.dtype.kind == "O":
            if not all(isinstance(v, (str, bytes)) for v in array.reshape(-1)):
                raise TypeError(f"{where} holds Python objects that are neither numbers nor strings; convert it first")
            return array
    return value


def to_leaf(value, spec=None, where="an element"):
    """A component as the C++ pipeline carries it: a Tensor or a StringTensor. `spec`, when known, fixes the dtype
    that Python data converts to."""
    value = normalized(value, where)
    if (spec is not None and spec.dtype is string) or (spec is None and is_string(value)):
        if not is_string(value):
            raise TypeError(f"{where} is a {type(value).__name__} where the dataset has a tf.string; return strings "
                            "for every element")
        return value if isinstance(value, StringTensor) else StringTensor(_bytes_array(value))
    if spec is not None and is_string(value):
        raise TypeError(f"{where} is a string where the dataset has a {spec.dtype.name} tensor; return the same "
                        "types for every element")
    from .. import _core

    if all(hasattr(value, a) for a in ("indices", "values", "dense_shape")):
        raise TypeError(f"{where} is a SparseTensor; lockstep datasets carry dense tensors: parse it with a "
                        "FixedLenFeature (with a default_value) rather than a VarLenFeature")
    if isinstance(value, _np.generic):  # np.float64 is also a Python float, which would become float32
        value = _np.asarray(value)
    try:
        return _core.convert_to_tensor(value, dtype=None if spec is None or isinstance(value, Tensor) else spec.dtype)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{where}: {e}") from None


def _bytes_array(value):
    """Strings (str, bytes or an array of them) as an object array of bytes of their shape."""
    values = _np.asarray(value, dtype=object)
    out = _np.empty(values.size, dtype=object)
    out[:] = [v.encode() if isinstance(v, str) else bytes(v) for v in values.reshape(-1)]
    return out.reshape(values.shape)


def spec_of(leaf):
    """The TensorSpec of a Tensor or StringTensor leaf."""
    return TensorSpec(leaf.shape, leaf.dtype)


class Structure:
    """An element's nest of TensorSpecs: what map functions must return, and what turns the nest the C++ pipeline
    hands over (tuples where TF has namedtuples) into TensorFlow's element."""

    def __init__(self, tree):
        self.tree = tree
        self.specs = flatten(tree)
        # The common shapes, which encode and decode handle without walking the nest: one tensor, a flat tuple.
        self._single = isinstance(tree, TensorSpec)
        self._flat_tuple = type(tree) is tuple and all(isinstance(s, TensorSpec) for s in tree)
        self._named = _has_namedtuple(tree)
        self._enums = [None if s.dtype is string else s.dtype._lockstep_dtype for s in self.specs]
        self._names = None

    @classmethod
    def of_value(cls, value):
        """The structure of one concrete element `value`."""
        return cls(pack_as(value, [spec_of(to_leaf(v)) for v in flatten(value)]))

    def with_specs(self, specs):
        return Structure(pack_as(self.tree, specs))

    def batched(self, batch_size):
        return self.with_specs([s._with_shape([batch_size] + list(s.shape)) for s in self.specs])

    def unbatched(self):
        return self.with_specs([s._with_shape(list(s.shape)[1:]) for s in self.specs])

    def encode(self, value, where="map()"):
        """`value`, which must have this structure, as the nest of Tensors and StringTensors C++ carries."""
        if self._single and not is_structure(value):
            flat = [value]
        elif (self._flat_tuple and type(value) is tuple and len(value) == len(self.specs)
              and not any(is_structure(v) for v in value)):
            flat = value
        elif same_nest(value, self.tree):
            flat = flatten(value)
        else:
            raise TypeError(f"{where} returned an element of structure {_describe(value)} but earlier ones have "
                            f"{_describe(self.tree)}; return the same structure for every element")
        if self._names is None:
            self._names = paths(self.tree)
        leaves = []
        for v, s, enum, name in zip(flat, self.specs, self._enums, self._names):
            if type(v) is Tensor and v._dtype == enum:  # already what C++ carries
                leaves.append(v)
            else:
                leaves.append(to_leaf(v, s, f"{where}: component {name}"))
        if self._single:
            return leaves[0]
        return tuple(leaves) if self._flat_tuple else pack_as(self.tree, leaves)

    def decode(self, value):
        """The Python element (TensorFlow's nest) of the C++ element `value` the binding handed over."""
        return pack_as(self.tree, flatten(value)) if self._named else value


def _has_namedtuple(tree):
    if isinstance(tree, dict):
        return any(_has_namedtuple(v) for v in tree.values())
    if isinstance(tree, tuple):
        return hasattr(tree, "_fields") or any(_has_namedtuple(v) for v in tree)
    return False


def same_nest(a, b):
    if isinstance(b, dict):
        return isinstance(a, dict) and sorted(a) == sorted(b) and all(same_nest(a[k], b[k]) for k in b)
    if isinstance(b, tuple):
        return isinstance(a, tuple) and len(a) == len(b) and all(same_nest(x, y) for x, y in zip(a, b))
    return not is_structure(a)


def _describe(tree):
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(tree[k])}" for k in sorted(tree)) + "}"
    if isinstance(tree, tuple):
        return "(" + ", ".join(_describe(v) for v in tree) + ("," if len(tree) == 1 else "") + ")"
    return "tensor"


def numpy_of(value):
    """The element with every leaf as NumPy (as_numpy_iterator): bytes for string scalars, as TensorFlow."""
    return _nest_map(lambda t: t.numpy(), value)


def _nest_map(fn, value):
    if isinstance(value, dict):
        return {k: _nest_map(fn, value[k]) for k in value}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_nest_map(fn, v) for v in value])
    if isinstance(value, tuple):
        return tuple(_nest_map(fn, v) for v in value)
    return fn(value)


if hasattr(_lockstep, "data"):  # the C++ pipeline hands string leaves over as this class
    _lockstep.data._set_string_tensor_class(StringTensor)
