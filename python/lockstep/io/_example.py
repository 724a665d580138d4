"""tf.train.Example and the messages inside it (Features, Feature, BytesList, FloatList, Int64List). Their bytes and
text are the C++ data layer's (lockstep/data/example.h, over generated protobuf code), so SerializeToString() gives
the bytes TensorFlow writes with deterministic=True and FromString() reads what TensorFlow wrote.

The classes behave as protobuf messages do where programs touch them: keyword construction, attribute access,
`feature["k"]` creating map entries, `value.append/extend`, WhichOneof, HasField, CopyFrom, equality and text repr.
Each hands the C++ side its value (`_value`) and takes one back (`_assign`): a list's values; a Feature's
(kind, values), None when no kind is set; a Features' {key: Feature value}; an Example's Features value or None.
"""
import numpy as _np

from .. import errors as _errors
from .._lockstep import io as _io


class DecodeError(Exception):
    """google.protobuf.message.DecodeError: the bytes are not a message of this type."""


def _parse(cls, serialized):
    """The value of a serialized `cls` message, as the C++ side reads it."""
    try:
        return _io.parse_message(cls.__name__, bytes(serialized))
    except _errors.DataLossError as e:
        raise DecodeError(str(e)) from None


def _int64(v):
    if isinstance(v, (bool, _np.bool_)) or not isinstance(v, (int, _np.integer)):
        raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: int")
    v = int(v)
    if not -2**63 <= v < 2**63:
        raise ValueError(f"Value out of range: {v}")
    return v


def _float(v):
    if not isinstance(v, (int, float, _np.integer, _np.floating)) or isinstance(v, (bool, _np.bool_)):
        raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: int, float")
    return float(_np.float32(v))  # a float field holds float32, as protobuf's does from the moment it is set


def _bytes(v):
    if isinstance(v, _np.bytes_):
        return bytes(v)
    if not isinstance(v, bytes):
        raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: bytes")
    return v


class _Message:
    """Serialization, parsing and text shared by the message classes, all done by the C++ side."""

    def SerializeToString(self, deterministic=None):  # noqa: N802 (protobuf's names)
        return _io.serialize_message(type(self).__name__, self._value())

    def SerializePartialToString(self, deterministic=None):  # noqa: N802
        return self.SerializeToString()

    def ParseFromString(self, serialized):  # noqa: N802
        self._assign(_parse(type(self), serialized))
        return len(serialized)

    def MergeFromString(self, serialized):  # noqa: N802
        # Protobuf merges as it parses concatenated messages: lists append, a later kind or map entry wins.
        self._assign(_parse(type(self), self.SerializeToString() + bytes(serialized)))
        return len(serialized)

    @classmethod
    def FromString(cls, serialized):  # noqa: N802
        out = cls()
        out.ParseFromString(serialized)
        return out

    def CopyFrom(self, other):  # noqa: N802
        if type(other) is not type(self):
            raise TypeError(f"Parameter to CopyFrom() must be instance of same class: expected {type(self).__name__} "
                            f"got {type(other).__name__}.")
        self._assign(other._value())

    def Clear(self):  # noqa: N802
        self.__init__()

    def ByteSize(self):  # noqa: N802
        return len(self.SerializeToString())

    def __repr__(self):
        return _io.message_text(type(self).__name__, self.SerializeToString())

    __str__ = __repr__


def _copy(message):
    out = type(message)()
    out.CopyFrom(message)
    return out


class _Repeated(list):
    """A repeated scalar field: a list that checks what goes in."""

    def __init__(self, check, values=()):
        super().__init__(check(v) for v in values)
        self._check = check

    def append(self, v):
        super().append(self._check(v))

    def extend(self, values):
        super().extend(self._check(v) for v in values)

    def insert(self, i, v):
        super().insert(i, self._check(v))

    def __setitem__(self, i, v):
        super().__setitem__(i, [self._check(x) for x in v] if isinstance(i, slice) else self._check(v))


class _List(_Message):
    """BytesList, FloatList and Int64List: one repeated field `value`."""

    _check = None

    def __init__(self, value=()):
        self.value = value

    @property
    def value(self):
        return self._values

    @value.setter
    def value(self, values):
        self._values = _Repeated(type(self)._check, values)

    def __eq__(self, other):
        return type(self) is type(other) and list(self.value) == list(other.value)

    def ListFields(self):  # noqa: N802 (protobuf's name)
        return [("value", self.value)] if self.value else []

    def _value(self):
        return list(self._values)

    def _assign(self, values):
        self.value = values


class BytesList(_List):
    _check = staticmethod(_bytes)


class FloatList(_List):
    _check = staticmethod(_float)


class Int64List(_List):
    _check = staticmethod(_int64)


class Feature(_Message):
    """One feature: exactly one of bytes_list, float_list, int64_list (the oneof `kind`)."""

    _KINDS = {"bytes_list": BytesList, "float_list": FloatList, "int64_list": Int64List}

    def __init__(self, bytes_list=None, float_list=None, int64_list=None):
        self._kind, self._list = None, None
        given = [(name, v) for name, v in (("bytes_list", bytes_list), ("float_list", float_list),
                                            ("int64_list", int64_list)) if v is not None]
        for name, v in given:  # as protobuf, the last one given wins
            self._set(name, v)

    def _set(self, name, value):
        cls = self._KINDS[name]
        if not isinstance(value, cls):
            raise TypeError(f"Feature.{name} must be a {cls.__name__}, got {type(value).__name__}")
        self._kind, self._list = name, cls(value.value)

    def _get(self, name):
        if self._kind != name:  # reading a field of the oneof selects it, so that .value.append() sticks
            self._kind, self._list = name, self._KINDS[name]()
        return self._list

    bytes_list = property(lambda self: self._get("bytes_list"), lambda self, v: self._set("bytes_list", v))
    float_list = property(lambda self: self._get("float_list"), lambda self, v: self._set("float_list", v))
    int64_list = property(lambda self: self._get("int64_list"), lambda self, v: self._set("int64_list", v))

    def WhichOneof(self, oneof_group):  # noqa: N802
        if oneof_group != "kind":
            raise ValueError(f'Protocol message has no oneof "{oneof_group}" field.')
        return self._kind

    def HasField(self, name):  # noqa: N802
        return self._kind == name or (name == "kind" and self._kind is not None)

    def __eq__(self, other):
        return isinstance(other, Feature) and self._kind == other._kind and self._list == other._list

    def _value(self):
        return None if self._kind is None else (self._kind, self._list._value())

    def _assign(self, value):
        self._kind, self._list = (None, None) if value is None else (value[0], self._KINDS[value[0]](value[1]))


class _FeatureMap(dict):
    """map<string, Feature>: indexing a missing key creates its entry, as protobuf's message maps do."""

    def __missing__(self, key):
        if not isinstance(key, str):
            raise TypeError(f"feature keys are str, got {type(key).__name__}")
        self[key] = Feature()
        return self[key]

    def __setitem__(self, key, value):
        if not isinstance(value, Feature):
            raise TypeError(f"a feature map's values are tf.train.Feature, got {type(value).__name__}")
        dict.__setitem__(self, key, value)

    def get_or_create(self, key):
        return self[key]


class Features(_Message):
    """A map from feature name to Feature (the field `feature`)."""

    def __init__(self, feature=None):
        self.feature = feature or {}

    @property
    def feature(self):
        return self._feature

    @feature.setter
    def feature(self, mapping):
        self._feature = _FeatureMap()
        for key, value in dict(mapping).items():
            # protobuf copies what it is given; the map refuses what is not a Feature
            self._feature[key] = _copy(value) if isinstance(value, Feature) else value

    def __eq__(self, other):
        return isinstance(other, Features) and dict(self._feature) == dict(other._feature)

    def _value(self):
        return {key: feature._value() for key, feature in self._feature.items()}

    def _assign(self, value):
        self._feature = _FeatureMap()
        for key, feature in value.items():
            self._feature[key] = Feature()
            self._feature[key]._assign(feature)


class Example(_Message):
    """tf.train.Example: one record of features."""

    def __init__(self, features=None):
        self._features = None
        if features is not None:
            self.features = features

    @property
    def features(self):
        if self._features is None:
            self._features = Features()
        return self._features

    @features.setter
    def features(self, value):
        if not isinstance(value, Features):
            raise TypeError(f"Example.features must be a tf.train.Features, got {type(value).__name__}")
        self._features = _copy(value)

    def HasField(self, name):  # noqa: N802
        return name == "features" and self._features is not None

    def __eq__(self, other):
        return isinstance(other, Example) and self.features == other.features

    def _value(self):
        return None if self._features is None else self._features._value()

    def _assign(self, value):
        self._features = None
        if value is not None:
            self.features._assign(value)
