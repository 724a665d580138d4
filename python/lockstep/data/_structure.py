"""How tf.data's nested elements travel through lockstep's C++ pipeline, whose elements hold at most three tensors
(x, y, sample_weight: the slots).

An element's structure is a nest of tuples, namedtuples and dicts (dicts in sorted key order, as tf.nest) whose
leaves are TensorSpecs; lists are tensors, as in tf.data. With at most three leaves each leaf is one slot, so an
(x, y) dataset reaches Keras as Element{x, y}. A larger structure is packed into one uint8 slot of shape
[batch dims..., the leaves' shapes and bytes] (see Structure), which batch, shuffle, cache and the rest move like
any tensor.

lockstep has no string tensors: a tf.string leaf travels as uint8 [..., 8 + length] (each string's length, then its
bytes, zero-padded to the longest: see string_bytes) and reaches Python as a StringTensor.
"""
import numpy as _np

from .. import dtypes
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


_HEADER = 8  # bytes of the little-endian uint64 length in front of each string of a pipeline slot


def string_bytes(value, header=True):
    """A string leaf (StringTensor, bytes, str or a NumPy array of them) as uint8 [shape..., width].

    In a pipeline's slots (header=True) each string is its length (8 bytes, little-endian) and its bytes, padded
    with zeros to the longest, so that strings of any lengths batch. Without the header (the C++ Example parser's
    form) every string must have one length.
    """
    values = value._values if isinstance(value, StringTensor) else _np.asarray(value, dtype=object)
    flat = [v.encode() if isinstance(v, str) else bytes(v) for v in values.reshape(-1)]
    longest = max((len(v) for v in flat), default=0)
    if header:
        flat = [len(v).to_bytes(_HEADER, "little") + v + bytes(longest - len(v)) for v in flat]
    elif any(len(v) != longest for v in flat):
        raise ValueError(f"strings of lengths {min(len(v) for v in flat)} and {longest} in one tensor: give them one "
                         "length (pad them)")
    width = longest + (_HEADER if header else 0)
    raw = _np.frombuffer(b"".join(flat), dtype=_np.uint8)
    return raw.reshape(values.shape + (width,))


def strings_of(slot, header=True):
    """A uint8 slot [shape..., width] (see string_bytes) as the StringTensor of that shape."""
    raw = _np.asarray(slot.numpy() if hasattr(slot, "numpy") else slot, dtype=_np.uint8)
    rows = raw.reshape(-1, raw.shape[-1])
    values = _np.empty(len(rows), dtype=object)
    for i, row in enumerate(rows):
        if header:
            n = int.from_bytes(row[:_HEADER].tobytes(), "little")
            values[i] = row[_HEADER:_HEADER + n].tobytes()
        else:
            values[i] = row.tobytes()
    return StringTensor(values.reshape(raw.shape[:-1]))


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

    out = build(tree)
    return out


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
    """A component as what the C++ side carries: a Tensor (numeric) or uint8 bytes (string). `spec`, when known,
    fixes the dtype that Python data converts to."""
    value = normalized(value, where)
    if (spec is not None and spec.dtype is string) or (spec is None and is_string(value)):
        if not is_string(value):
            raise TypeError(f"{where} is a {type(value).__name__} where the dataset has a tf.string; return strings "
                            "for every element")
        return tensor_of(string_bytes(value))
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


def tensor_of(array):
    from .. import _core

    return _core.convert_to_tensor(_np.require(array, requirements="C"))  # ascontiguousarray makes 0-d 1-d


def spec_of(leaf_value, tensor):
    """The TensorSpec of a component given as `leaf_value` and carried as `tensor`."""
    if is_string(leaf_value):
        return TensorSpec(tensor.shape[:-1], string)
    return TensorSpec(tensor.shape, tensor.dtype)


class Structure:
    """An element's nest of TensorSpecs and how its leaves sit in the C++ element's slots.

    `layout` is None for one leaf per slot, else, for a packed structure, one (dtype, rank) per leaf: the rank of
    the tensor that carries one element's leaf (for strings, one more than the leaf's: the bytes' axis). A packed row
    is the shape of each leaf's tensor (uint64s, little-endian) and then their bytes; rows of one batch are
    zero-padded to the widest (so strings of any lengths batch) and must agree on the numbers' shapes.
    """

    def __init__(self, tree, layout=None):
        self.tree = tree
        self.specs = flatten(tree)
        self.layout = layout
        # The common shapes, which encode and decode handle without walking the nest: one tensor, a flat tuple.
        self._single = isinstance(tree, TensorSpec)
        self._flat_tuple = type(tree) is tuple and all(isinstance(s, TensorSpec) for s in tree)
        self._strings = [s.dtype is string for s in self.specs]
        self._enums = [None if s.dtype is string else s.dtype._lockstep_dtype for s in self.specs]
        self._names = None

    packed = property(lambda self: self.layout is not None)

    @classmethod
    def of_value(cls, value, leaves=None):
        """The structure of one concrete element `value` whose leaves convert to `leaves` (tensors or bytes)."""
        flat = [normalized(v) for v in flatten(value)]
        leaves = leaves if leaves is not None else [to_leaf(v) for v in flat]
        specs = [spec_of(v, t) for v, t in zip(flat, leaves)]
        return cls(pack_as(value, specs), layout_of(specs, leaves) if len(specs) > 3 else None)

    def with_specs(self, specs):
        return Structure(pack_as(self.tree, specs), self.layout)

    def batched(self, batch_size):
        return self.with_specs([s._with_shape([batch_size] + list(s.shape)) for s in self.specs])

    def unbatched(self):
        return self.with_specs([s._with_shape(list(s.shape)[1:]) for s in self.specs])

    # ---- Python values <-> slots ----
    def encode(self, value, where="map()"):
        """The slots (at most three tensors) carrying `value`, which must have this structure."""
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
        if not self.packed:
            return leaves
        return [self._pack(leaves, self._names, where)]

    def _pack(self, leaves, names, where):
        shapes, parts = [], []
        for t, (dtype, rank), name in zip(leaves, self.layout, names):
            if len(t.shape) != rank:
                raise ValueError(f"{where}: component {name} has rank {len(t.shape)} but {rank} in the first element; "
                                 "give every element's component one rank")
            shapes.extend(t.shape)
            parts.append(_np.ascontiguousarray(t.numpy()).reshape(-1).view(_np.uint8))
        return tensor_of(_np.concatenate([_np.array(shapes, dtype="<u8").view(_np.uint8)] + parts))

    def decode(self, slots):
        """The Python element (a nest of Tensors and StringTensors) that `slots` carry."""
        if self.packed:
            leaves = self._unpack(slots[0])
        elif not any(self._strings):
            if self._single:
                return slots[0]
            if self._flat_tuple:
                return tuple(slots)
            leaves = slots
        else:
            leaves = [strings_of(t) if is_str else t for t, is_str in zip(slots, self._strings)]
        return pack_as(self.tree, leaves)

    def _unpack(self, slot):
        raw = slot.numpy()
        batch = raw.shape[:-1]
        rows = raw.reshape(-1, raw.shape[-1])
        width = 8 * sum(rank for _, rank in self.layout)
        headers = _np.ascontiguousarray(rows[:, :width]).view("<u8")
        if len(rows) == 0 or (headers == headers[0]).all():  # one shape per leaf in all rows: slice columns
            out = []
            for (dtype, _), shape, column in self._columns(rows, headers[0] if len(rows) else None):
                if dtype is string:
                    out.append(strings_of(column.reshape(batch + shape)))
                else:
                    out.append(tensor_of(column.view(dtype.as_numpy_dtype).reshape(batch + shape)))
            return out
        per_row = [self._columns(row[None], header) for row, header in zip(rows, headers)]
        out = []
        for i, (dtype, _) in enumerate(self.layout):
            if dtype is string:  # strings of other lengths in other rows
                values = _np.stack([strings_of(r[i][2].reshape(r[i][1]))._values for r in per_row])
                out.append(StringTensor(values.reshape(batch + values.shape[1:])))
                continue
            shapes = {r[i][1] for r in per_row}
            if len(shapes) > 1:
                raise ValueError(f"batch: the elements of a batch have component {i} of shapes {sorted(shapes)}; "
                                 "elements of one batch must match: map them to one shape first")
            column = _np.concatenate([r[i][2] for r in per_row])
            out.append(tensor_of(column.view(dtype.as_numpy_dtype).reshape(batch + shapes.pop())))
        return out

    def _columns(self, rows, header):
        """(layout entry, shape, bytes [rows, n]) of each leaf of packed rows that share `header`."""
        if header is None:
            return [(entry, (0,) * entry[1], _np.zeros((0, 0), _np.uint8)) for entry in self.layout]
        out, at, offset = [], 0, 8 * len(header)
        for dtype, rank in self.layout:
            shape = tuple(int(d) for d in header[at:at + rank])
            at += rank
            item = 1 if dtype is string else _np.dtype(dtype.as_numpy_dtype).itemsize
            n = int(_np.prod(shape, dtype=_np.int64)) * item
            out.append(((dtype, rank), shape, _np.ascontiguousarray(rows[:, offset:offset + n])))
            offset += n
        return out

    def slots_from_tensors(self, leaves):
        """Slots for whole-dataset leaves (from_tensor_slices): one per leaf, or packed rows."""
        if not self.packed:
            return leaves
        n = leaves[0].shape[0]
        rows = [_np.ascontiguousarray(t.numpy()).reshape(n, -1).view(_np.uint8) for t in leaves]
        header = _np.array([d for t in leaves for d in list(t.shape)[1:]], dtype="<u8").view(_np.uint8)
        return [tensor_of(_np.concatenate([_np.tile(header, (n, 1))] + rows, axis=1))]


def layout_of(specs, leaves):
    """The packed layout of one element's leaves (tensors or string bytes) described by specs."""
    return [(s.dtype, len(t.shape)) for s, t in zip(specs, leaves)]


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

