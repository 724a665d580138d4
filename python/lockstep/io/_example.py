"""tf.train.Example and the messages inside it (Features, Feature, BytesList, FloatList, Int64List), written and read
in protobuf's wire format (tensorflow/core/example/example.proto), so SerializeToString() gives bytes TensorFlow
parses and FromString() reads what TensorFlow wrote. Maps are written in sorted key order, as TF's deterministic
serialization does; numeric lists packed, as proto3 does.

The classes behave as protobuf messages do where programs touch them: keyword construction, attribute access,
`feature["k"]` creating map entries, `value.append/extend`, WhichOneof, HasField, CopyFrom, equality and text repr.
"""
import struct

import numpy as _np


# ---- wire format ----
def _varint(n):
    n &= 0xFFFFFFFFFFFFFFFF  # negative int64s take ten bytes, as two's complement
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number, payload):
    """A length-delimited field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _read_varint(data, pos):
    result = shift = 0
    while True:
        if pos >= len(data):
            raise _decode_error("a varint runs past the end of the message")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise _decode_error("a varint is longer than 10 bytes")


def _fields(data):
    """(field number, wire type, value) for each field of a message: value is an int for varints and fixed-width
    fields, bytes for length-delimited ones."""
    data = bytes(data)
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            if pos + length > len(data):
                raise _decode_error("a field is longer than the message")
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise _decode_error(f"wire type {wire} of field {number} is not one protobuf writes here")
        if pos > len(data):
            raise _decode_error("a field is cut short")
        yield number, wire, value


class DecodeError(Exception):
    """google.protobuf.message.DecodeError: the bytes are not a message of this type."""


def _decode_error(what):
    return DecodeError(f"Error parsing message: {what}")


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
    return float(v)


def _bytes(v):
    if isinstance(v, _np.bytes_):
        return bytes(v)
    if not isinstance(v, bytes):
        raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: bytes")
    return v


class _Message:
    """Serialization shared by the message classes."""

    def SerializeToString(self, deterministic=None):  # noqa: N802 (protobuf's names)
        return self._serialize()

    def SerializePartialToString(self, deterministic=None):  # noqa: N802
        return self._serialize()

    def ParseFromString(self, serialized):  # noqa: N802
        self.Clear()
        self._parse(serialized)
        return len(serialized)

    def MergeFromString(self, serialized):  # noqa: N802
        merged = type(self).FromString(self._serialize() + bytes(serialized))
        self.CopyFrom(merged)
        return len(serialized)

    @classmethod
    def FromString(cls, serialized):  # noqa: N802
        out = cls()
        out._parse(serialized)
        return out

    def CopyFrom(self, other):  # noqa: N802
        if type(other) is not type(self):
            raise TypeError(f"Parameter to CopyFrom() must be instance of same class: expected {type(self).__name__} "
                            f"got {type(other).__name__}.")
        self.Clear()
        self._parse(other._serialize())

    def Clear(self):  # noqa: N802
        self.__init__()

    def ByteSize(self):  # noqa: N802
        return len(self._serialize())

    def __repr__(self):
        return self._text("")

    __str__ = __repr__


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
        return self._value

    @value.setter
    def value(self, values):
        self._value = _Repeated(type(self)._check, values)

    def __eq__(self, other):
        return type(self) is type(other) and list(self.value) == list(other.value)

    def ListFields(self):  # noqa: N802 (protobuf's name)
        return [("value", self.value)] if self.value else []

    def _text(self, indent):
        return "".join(f"{indent}value: {self._format(v)}\n" for v in self.value)


class BytesList(_List):
    _check = staticmethod(_bytes)

    def _serialize(self):
        return b"".join(_field(1, v) for v in self.value)

    def _parse(self, data):
        self.value = [bytes(v) for n, w, v in _fields(data) if n == 1 and w == 2]

    @staticmethod
    def _format(v):
        return '"' + "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:03o}" for c in v) + '"'


class FloatList(_List):
    _check = staticmethod(_float)

    def _serialize(self):
        if not self.value:
            return b""
        return _field(1, _np.asarray(self.value, dtype="<f4").tobytes())

    def _parse(self, data):
        values = []
        for n, w, v in _fields(data):
            if n == 1 and w == 2:
                values.extend(float(x) for x in _np.frombuffer(v, dtype="<f4"))
            elif n == 1 and w == 5:
                values.append(struct.unpack("<f", v)[0])
        self.value = values

    @staticmethod
    def _format(v):
        return _np.format_float_positional(_np.float32(v), trim="-")


class Int64List(_List):
    _check = staticmethod(_int64)

    def _serialize(self):
        if not self.value:
            return b""
        return _field(1, b"".join(_varint(v) for v in self.value))

    def _parse(self, data):
        values = []
        for n, w, v in _fields(data):
            if n == 1 and w == 2:
                pos = 0
                while pos < len(v):
                    x, pos = _read_varint(v, pos)
                    values.append(x - 2**64 if x >= 2**63 else x)
            elif n == 1 and w == 0:
                values.append(v - 2**64 if v >= 2**63 else v)
        self.value = values

    _format = staticmethod(str)


class Feature(_Message):
    """One feature: exactly one of bytes_list, float_list, int64_list (the oneof `kind`)."""

    _KINDS = (("bytes_list", 1, BytesList), ("float_list", 2, FloatList), ("int64_list", 3, Int64List))

    def __init__(self, bytes_list=None, float_list=None, int64_list=None):
        self._kind, self._list = None, None
        given = [(name, v) for name, v in (("bytes_list", bytes_list), ("float_list", float_list),
                                            ("int64_list", int64_list)) if v is not None]
        for name, v in given:  # as protobuf, the last one given wins
            self._set(name, v)

    def _set(self, name, value):
        cls = dict((k, c) for k, _, c in self._KINDS)[name]
        if not isinstance(value, cls):
            raise TypeError(f"Feature.{name} must be a {cls.__name__}, got {type(value).__name__}")
        self._kind, self._list = name, cls(value.value)

    def _get(self, name):
        cls = dict((k, c) for k, _, c in self._KINDS)[name]
        if self._kind != name:  # reading a field of the oneof selects it, so that .value.append() sticks
            self._kind, self._list = name, cls()
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

    def _serialize(self):
        if self._kind is None:
            return b""
        number = dict((k, n) for k, n, _ in self._KINDS)[self._kind]
        return _field(number, self._list._serialize())

    def _parse(self, data):
        for n, w, v in _fields(data):
            for name, number, cls in self._KINDS:
                if n == number and w == 2:
                    self._kind, self._list = name, cls.FromString(v)

    def __eq__(self, other):
        return isinstance(other, Feature) and self._kind == other._kind and self._list == other._list

    def _text(self, indent):
        if self._kind is None:
            return ""
        return f"{indent}{self._kind} {{\n{self._list._text(indent + '  ')}{indent}}}\n"


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
            dict.__setitem__(self._feature, key, Feature.FromString(value._serialize()))

    def _serialize(self):
        return b"".join(_field(1, _field(1, k.encode()) + _field(2, self._feature[k]._serialize()))
                        for k in sorted(self._feature))

    def _parse(self, data):
        for n, w, entry in _fields(data):
            if n != 1 or w != 2:
                continue
            key, value = "", Feature()
            for en, ew, ev in _fields(entry):
                if en == 1 and ew == 2:
                    key = ev.decode()
                elif en == 2 and ew == 2:
                    value = Feature.FromString(ev)
            dict.__setitem__(self._feature, key, value)

    def __eq__(self, other):
        return isinstance(other, Features) and dict(self._feature) == dict(other._feature)

    def _text(self, indent):
        inner = indent + "  "
        return "".join(f'{indent}feature {{\n{inner}key: "{k}"\n{inner}value {{\n'
                       f"{self._feature[k]._text(inner + '  ')}{inner}}}\n{indent}}}\n" for k in sorted(self._feature))


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
        self._features = Features.FromString(value._serialize())

    def HasField(self, name):  # noqa: N802
        return name == "features" and self._features is not None

    def _serialize(self):
        return b"" if self._features is None else _field(1, self._features._serialize())

    def _parse(self, data):
        for n, w, v in _fields(data):
            if n == 1 and w == 2:
                self._features = Features.FromString(v)

    def __eq__(self, other):
        return isinstance(other, Example) and self.features == other.features

    def _text(self, indent):
        if self._features is None:
            return ""
        return f"{indent}features {{\n{self._features._text(indent + '  ')}{indent}}}\n"
