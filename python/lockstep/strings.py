"""tf.strings: TensorFlow's string ops over tf.string tensors (StringTensor: an object array of bytes), in NumPy and
Python. What TF returns ragged (split, bytes_split, unicode_decode of a non-scalar) is a tf.RaggedTensor; ops on
strings apply to a RaggedTensor's flat values. Hashes are TF's own: FarmHash Fingerprint64 and SipHash-2-4.
"""
import builtins as _builtins
import codecs as _codecs
import re as _re

import numpy as _np

from . import _unimplemented, dtypes as _dtypes, errors as _errors
from ._tensor import Tensor as _Tensor
from .data._structure import StringTensor as _StringTensor

_M64 = (1 << 64) - 1


# ---- conversions ---------------------------------------------------------------------------------------------------

def _is_ragged(x):
    return hasattr(x, "flat_values") and hasattr(x, "with_flat_values")


def _array(x, what="input"):
    """A tf.string argument as an object ndarray of bytes; a numeric tensor is TF's InvalidArgumentError, a Python
    value that is not strings its TypeError."""
    if isinstance(x, _StringTensor):
        return x._values
    if _is_ragged(x):
        raise NotImplementedError(f"tf.strings with a RaggedTensor {what} is not implemented by lockstep for this op "
                                  "(see docs/python.md); pass its flat_values")
    if isinstance(x, _Tensor) or hasattr(x, "_lockstep_tensor_"):
        raise _errors.InvalidArgumentError(f"{what} must be a tf.string tensor, got a {x.dtype.name} tensor; convert "
                                           "it with tf.strings.as_string first")
    values = _np.asarray(x, dtype=object)
    flat = values.reshape(-1)
    if not all(isinstance(v, (str, bytes, _np.bytes_, _np.str_)) for v in flat):
        raise TypeError(f"cannot convert {x!r} to a tf.string tensor for {what}: give strings")
    out = _np.empty(values.shape, dtype=object)
    out.reshape(-1)[:] = [v.encode() if isinstance(v, str) else bytes(v) for v in flat]
    return out


def _strings(values):
    """An object array of bytes (or a list of bytes) as a tf.string tensor."""
    if isinstance(values, list):
        array = _np.empty(len(values), dtype=object)
        array[:] = values
        values = array
    return _StringTensor(values)


def _numbers(values, dtype):
    from . import _core

    return _core.convert_to_tensor(_np.asarray(values, dtype=_dtypes.as_dtype(dtype).as_numpy_dtype))


def _text(value, what):
    """A scalar string argument (a pattern, a separator) as bytes."""
    if isinstance(value, _StringTensor):
        if value.ndim != 0:
            raise _errors.InvalidArgumentError(f"{what} must be a scalar string, got shape {list(value.shape)}")
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, _np.bytes_)):
        return bytes(value)
    raise TypeError(f"{what} must be a string, got {type(value).__name__}")


def _map(fn, x, what="input"):
    """fn applied to each string of x, giving a string tensor of x's shape (ragged x: of its flat values)."""
    if _is_ragged(x):
        return x.with_flat_values(_map(fn, x.flat_values, what))
    values = _array(x, what)
    out = _np.empty(values.shape, dtype=object)
    out.reshape(-1)[:] = [fn(v) for v in values.reshape(-1)]
    return _StringTensor(out)


def _measure(fn, x, dtype, what="input"):
    """fn applied to each string of x, giving a numeric tensor of x's shape."""
    if _is_ragged(x):
        return x.with_flat_values(_measure(fn, x.flat_values, dtype, what))
    values = _array(x, what)
    return _numbers(_np.array([fn(v) for v in values.reshape(-1)]).reshape(values.shape), dtype)


def _ragged_class(op):
    from . import _ragged

    cls = getattr(_ragged, "RaggedTensor", None)
    if cls is None or not hasattr(cls, "from_row_splits"):
        raise NotImplementedError(f"tf.strings.{op} of a non-scalar input gives a tf.RaggedTensor, which this build "
                                  "of lockstep lacks (see docs/python.md); call it on one string at a time")
    return cls


def _pieces(fn, x, make, op):
    """fn(bytes) -> a list of items for each string of x: a 1-D tensor (made by `make`) for a scalar x, a
    RaggedTensor one rank higher for any other x (TF's split, bytes_split, unicode_decode)."""
    if _is_ragged(x):
        return x.with_flat_values(_pieces(fn, x.flat_values, make, op))
    values = _array(x, "input")
    if values.ndim == 0:
        return make(fn(values[()]))
    rows = [fn(v) for v in values.reshape(-1)]
    cls = _ragged_class(op)
    splits = _np.cumsum([0] + [len(r) for r in rows], dtype=_np.int64)
    out = cls.from_row_splits(make([item for r in rows for item in r]), _numbers(splits, _dtypes.int64))
    # The outer dimensions are uniform: each is a ragged dimension whose rows all have the same length.
    for n in reversed(values.shape[1:]):
        count = int(_np.prod(values.shape)) // n if n else 0
        out = cls.from_row_splits(out, _numbers(_np.arange(count + 1, dtype=_np.int64) * n, _dtypes.int64))
    return out


def _byte_list(items):
    return _strings(list(items))


def _unit(unit, op):
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise _errors.InvalidArgumentError(f"tf.strings.{op}: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    return unit


# ---- splitting and joining -----------------------------------------------------------------------------------------

def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002 (TensorFlow's names)
    """input's strings split at sep (None or "": at runs of whitespace, as str.split()): a 1-D tensor for a
    scalar, a RaggedTensor for more."""
    separator = None if sep is None else _text(sep, "tf.strings.split's sep") or None
    return _pieces(lambda s: s.split(separator, int(maxsplit)), input, _byte_list, "split")


def bytes_split(input, name=None):  # noqa: A002
    """Each string as its single bytes."""
    return _pieces(lambda s: [s[i:i + 1] for i in range(len(s))], input, _byte_list, "bytes_split")


def join(inputs, separator="", name=None):
    """The strings of `inputs` (tensors of one broadcastable shape) joined elementwise with separator."""
    if isinstance(inputs, (_StringTensor, str, bytes)):
        raise TypeError("tf.strings.join takes a list of string tensors; wrap a single tensor in a list")
    arrays = [_array(x, "tf.strings.join's inputs") for x in inputs]
    if not arrays:
        raise ValueError("tf.strings.join needs at least one input tensor")
    shapes = {a.shape for a in arrays if a.ndim}
    if len(shapes) > 1:
        raise _errors.InvalidArgumentError(f"tf.strings.join: input shapes do not match: {sorted(shapes)}; give "
                                           "tensors of one shape (or scalars)")
    sep = _text(separator, "tf.strings.join's separator")
    arrays = _np.broadcast_arrays(*arrays)
    out = _np.empty(arrays[0].shape, dtype=object)
    out.reshape(-1)[:] = [sep.join(parts) for parts in zip(*[a.reshape(-1) for a in arrays])]
    return _StringTensor(out)


def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """The strings joined along `axis` (None: all of them)."""
    values = _array(inputs, "tf.strings.reduce_join's inputs")
    sep = _text(separator, "tf.strings.reduce_join's separator")
    axes = tuple(range(values.ndim)) if axis is None else tuple(
        int(a) for a in (_np.asarray(axis.numpy() if hasattr(axis, "numpy") else axis).reshape(-1)))
    for a in axes:
        if not -values.ndim <= a < _builtins.max(values.ndim, 1):
            raise _errors.InvalidArgumentError(f"tf.strings.reduce_join: axis {a} is out of range for a tensor of "
                                               f"rank {values.ndim}")
    axes = tuple(sorted({a % values.ndim for a in axes})) if values.ndim else ()
    kept = [d for d in range(values.ndim) if d not in axes]
    moved = _np.transpose(values, kept + list(axes)).reshape([values.shape[d] for d in kept] + [-1])
    out = _np.empty(moved.shape[:-1], dtype=object)
    out.reshape(-1)[:] = [sep.join(row) for row in moved.reshape(-1, moved.shape[-1])]
    if keepdims:
        out = out.reshape([1 if d in axes else values.shape[d] for d in range(values.ndim)])
    return _StringTensor(out)


def _ngram_rows(row, widths, sep, pad, padding_width, preserve_short):
    out = []
    for n in widths:
        width = n - 1 if padding_width is None else int(padding_width)
        padded = [pad[0]] * width + list(row) + [pad[1]] * width if pad else list(row)
        if len(padded) >= n:
            out.extend(sep.join(padded[i:i + n]) for i in range(len(padded) - n + 1))
    if not out and preserve_short and row:
        out.append(sep.join(row))
    return out


def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None, preserve_short_sequences=False,
           name=None):
    """The n-grams of the innermost dimension of data, joined with separator."""
    widths = [int(ngram_width)] if _np.ndim(ngram_width) == 0 else [int(w) for w in ngram_width]
    if any(w < 1 for w in widths):
        raise ValueError(f"tf.strings.ngrams: ngram_width must be at least 1, got {ngram_width}")
    sep = _text(separator, "tf.strings.ngrams's separator")
    if pad_values is None:
        pad = None
    elif isinstance(pad_values, (tuple, list)):
        if len(pad_values) != 2:
            raise ValueError("tf.strings.ngrams: pad_values must be a string or a (left, right) pair of strings")
        pad = (_text(pad_values[0], "pad_values"), _text(pad_values[1], "pad_values"))
    else:
        pad = (_text(pad_values, "pad_values"),) * 2
    if padding_width is not None and int(padding_width) < 1:
        raise ValueError(f"tf.strings.ngrams: padding_width must be at least 1, got {padding_width}")

    def grams(row):
        return _ngram_rows(row, widths, sep, pad, padding_width, preserve_short_sequences)

    if _is_ragged(data):
        if _is_ragged(data.values):
            return type(data).from_row_splits(ngrams(data.values, ngram_width, separator, pad_values, padding_width,
                                                     preserve_short_sequences), data.row_splits)
        values, splits = _array(data.values, "data"), _np.asarray(data.row_splits.numpy())
        rows = [grams(list(values[splits[i]:splits[i + 1]])) for i in range(len(splits) - 1)]
        new_splits = _np.cumsum([0] + [len(r) for r in rows], dtype=_np.int64)
        return type(data).from_row_splits(_byte_list([g for r in rows for g in r]), _numbers(new_splits, "int64"))
    values = _array(data, "data")
    if values.ndim == 0:
        raise ValueError("tf.strings.ngrams: data must have rank 1 or more (a sequence of tokens), got a scalar")
    rows = [grams(list(r)) for r in values.reshape(-1, values.shape[-1])]
    # Dense rows all have the same length, and so do their n-gram lists: the result is dense again.
    count = len(rows[0]) if rows else 0
    out = _np.empty((len(rows), count), dtype=object)
    for i, r in enumerate(rows):
        out[i, :] = r
    return _StringTensor(out.reshape(values.shape[:-1] + (count,)))


# ---- per-string ops ------------------------------------------------------------------------------------------------

def length(input, name=None, unit="BYTE"):  # noqa: A002
    """Each string's length in bytes, or in UTF-8 characters (bytes that do not continue a character)."""
    if _unit(unit, "length") == "BYTE":
        return _measure(len, input, _dtypes.int32)
    return _measure(lambda s: sum(1 for b in s if b & 0xC0 != 0x80), input, _dtypes.int32)


def _char_starts(s):
    return [i for i, b in enumerate(s) if b & 0xC0 != 0x80] + [len(s)]


def substr(input, pos, len, unit="BYTE", name=None):  # noqa: A002
    """The substring of each string from pos (negative: from the end) of up to len bytes or characters; pos and len
    broadcast against input. A pos past the end is TF's InvalidArgumentError."""
    unit = _unit(unit, "substr")
    if _is_ragged(input):
        if _np.ndim(pos) or _np.ndim(len):
            raise NotImplementedError("tf.strings.substr of a RaggedTensor with non-scalar pos or len is not "
                                      "implemented by lockstep (see docs/python.md)")
        return input.with_flat_values(substr(input.flat_values, pos, len, unit))
    values = _array(input, "tf.strings.substr's input")
    pos_ = _np.asarray(pos.numpy() if hasattr(pos, "numpy") else pos)
    len_ = _np.asarray(len.numpy() if hasattr(len, "numpy") else len)
    if pos_.dtype.kind not in "iu" or len_.dtype.kind not in "iu":
        raise TypeError("tf.strings.substr: pos and len must be integers")
    try:
        values_b, pos_b, len_b = _np.broadcast_arrays(values, pos_, len_)
    except ValueError:
        raise _errors.InvalidArgumentError(f"tf.strings.substr: pos {list(pos_.shape)} and len {list(len_.shape)} do "
                                           f"not broadcast to input's shape {list(values.shape)}") from None
    out = _np.empty(values_b.shape, dtype=object)
    flat = out.reshape(-1)
    for i, (s, p, n) in enumerate(zip(values_b.reshape(-1), pos_b.reshape(-1), len_b.reshape(-1))):
        starts = _char_starts(s) if unit == "UTF8_CHAR" else None
        size = _builtins.len(starts) - 1 if starts is not None else _builtins.len(s)
        p, n = int(p), int(n)
        if p < 0:
            p += size
        if not 0 <= p <= size:
            raise _errors.InvalidArgumentError(f"tf.strings.substr: pos {int(pos_b.reshape(-1)[i])} is out of range "
                                               f"for string {s!r} at index {i} (of {size} {unit} units)")
        end = _builtins.min(size, p + _builtins.max(n, 0))
        flat[i] = s[starts[p]:starts[end]] if starts is not None else s[p:end]
    return _StringTensor(out)


_LOWER = bytes(range(256)).replace(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_UPPER = bytes(range(256)).replace(b"abcdefghijklmnopqrstuvwxyz", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _case(input, encoding, ascii_table, method):
    if encoding in ("", None):
        return _map(lambda s: s.translate(ascii_table), input)
    if encoding.lower().replace("-", "") != "utf8":
        raise _errors.InvalidArgumentError(f"encoding must be '' (ASCII) or 'utf-8', got {encoding!r}")
    return _map(lambda s: getattr(s.decode("utf-8", "surrogateescape"), method)().encode("utf-8", "surrogateescape"),
                input)


def lower(input, encoding="", name=None):  # noqa: A002
    """ASCII letters lowercased ('utf-8' encoding: every letter)."""
    return _case(input, encoding, _LOWER, "lower")


def upper(input, encoding="", name=None):  # noqa: A002
    """ASCII letters uppercased ('utf-8' encoding: every letter)."""
    return _case(input, encoding, _UPPER, "upper")


def strip(input, name=None):  # noqa: A002
    """Leading and trailing ASCII whitespace removed."""
    return _map(lambda s: s.strip(b" \t\n\v\f\r"), input)


# ---- regular expressions -------------------------------------------------------------------------------------------

def _regex(pattern):
    """An RE2 pattern as a Python one over text (strings are decoded with surrogateescape, so that '.' is one
    character as in RE2's UTF-8 mode); \\w, \\d, \\s are ASCII, as RE2's. Bad syntax is TF's InvalidArgumentError."""
    text = _text(pattern, "pattern").decode("utf-8", "surrogateescape")
    try:
        return _re.compile(text, _re.ASCII)
    except _re.error as e:
        raise _errors.InvalidArgumentError(f"invalid regular expression {text!r}: {e}") from None


def _rewrite(template):
    """RE2's rewrite string (\\0 to \\9 name groups, \\\\ is a backslash) as a function of a match."""
    parts, i = [], 0
    while i < _builtins.len(template):
        c = template[i]
        if c == "\\" and i + 1 < _builtins.len(template) and (template[i + 1].isdigit() or template[i + 1] == "\\"):
            parts.append(int(template[i + 1]) if template[i + 1].isdigit() else "\\")
            i += 2
        else:
            parts.append(c)
            i += 1
    return lambda m: "".join(m.group(p) or "" if isinstance(p, int) else p for p in parts)


def _decoded(fn):
    return lambda s: fn(s.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Matches of the RE2 pattern replaced by rewrite (\\1 its groups), every match or the first one."""
    regex = _regex(pattern)
    replace = _rewrite(_text(rewrite, "rewrite").decode("utf-8", "surrogateescape"))
    try:
        if any(p > regex.groups for p in [int(d) for d in _re.findall(r"\\(\d)", _text(rewrite, "r").decode())]):
            raise IndexError
    except IndexError:
        raise _errors.InvalidArgumentError(f"rewrite {rewrite!r} names a group that pattern {pattern!r} does not "
                                           "have") from None
    count = 0 if replace_global else 1
    return _map(_decoded(lambda s: regex.sub(replace, s, count)), input)


def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches the RE2 pattern."""
    regex = _regex(pattern)
    return _measure(lambda s: regex.fullmatch(s.decode("utf-8", "surrogateescape")) is not None, input, _dtypes.bool)


# ---- numbers -------------------------------------------------------------------------------------------------------

_NUMBER_DTYPES = ("float32", "float64", "int32", "int64")


def _parse(s, integer, dtype):
    text = s.decode("utf-8", "replace").strip()
    try:
        if integer:
            if not _re.fullmatch(r"[+-]?\d+", text):
                raise ValueError
            value = int(text)
            info = _np.iinfo(dtype.as_numpy_dtype)
            if not info.min <= value <= info.max:
                raise ValueError
            return value
        if "_" in text:
            raise ValueError  # Python's float() takes 1_000, strtod does not
        if _re.fullmatch(r"[+-]?0[xX][0-9a-fA-F.]+(p[+-]?\d+)?", text):
            return float.fromhex(text)  # strtod's hexadecimal form, which TF accepts
        return float(text)
    except ValueError:
        raise _errors.InvalidArgumentError(f"StringToNumberOp could not correctly convert string: {text} (as "
                                           f"{dtype.name}); fix the value or parse it as another out_type") from None


def to_number(input, out_type=_dtypes.float32, name=None):  # noqa: A002
    """Each string parsed as a number of out_type (float32, float64, int32 or int64)."""
    dtype = _dtypes.as_dtype(out_type)
    if dtype.name not in _NUMBER_DTYPES:
        raise TypeError(f"tf.strings.to_number: out_type must be one of {', '.join(_NUMBER_DTYPES)}, got "
                        f"{dtype.name}")
    return _measure(lambda s: _parse(s, dtype.is_integer, dtype), input, dtype)


def _number_array(x):
    from . import _core

    if isinstance(x, _StringTensor) or _is_ragged(x):
        raise _errors.InvalidArgumentError("tf.strings.as_string takes a numeric or bool tensor; it got strings")
    return _np.asarray(_core.convert_to_tensor(x).numpy())


def as_string(input, precision=-1, scientific=False, shortest=False, width=-1, fill="", name=None):  # noqa: A002
    """Each number as text, formatted as TF's printf-style options ask."""
    values = _number_array(input)
    fill = _text(fill, "fill").decode()
    if _builtins.len(fill) > 1:
        raise _errors.InvalidArgumentError(f"tf.strings.as_string: fill must be at most one character, got {fill!r}")
    if values.dtype.kind != "f" and (precision > -1 or scientific or shortest):
        raise _errors.InvalidArgumentError("tf.strings.as_string: precision, scientific and shortest apply to "
                                           "floating-point input only")
    if scientific and shortest:
        raise _errors.InvalidArgumentError("tf.strings.as_string: scientific and shortest cannot both be set")
    digits = "" if precision < 0 else f".{int(precision)}"
    kind = {"b": None, "i": "d", "u": "d"}.get(values.dtype.kind, "e" if scientific else "g" if shortest else "f")
    pad = "0" if fill == "0" else ""
    size = str(int(width)) if width > -1 else ""

    def text(v):
        if kind is None:
            body = "true" if v else "false"
            return (body.rjust(int(width), fill or " ") if width > -1 else body).encode()
        body = f"{{:{pad}{size}{'' if kind == 'd' else digits}{kind}}}".format(v.item())
        if fill not in ("", "0", " ") and width > -1:
            body = body.strip().rjust(int(width), fill)
        return body.encode()

    out = _np.empty(values.shape, dtype=object)
    out.reshape(-1)[:] = [text(v) for v in values.reshape(-1)]
    return _StringTensor(out)


def _summary(value, summarize):
    """A tensor as TF prints it in tf.strings.format: NumPy-like brackets, strings quoted, and only the first and
    last `summarize` entries of a long dimension."""
    if isinstance(value, _StringTensor):
        array = value._values
        item = lambda v: '"' + v.decode("utf-8", "replace") + '"'  # noqa: E731
    else:
        from . import _core

        array = _np.asarray(_core.convert_to_tensor(value).numpy())
        item = {"b": lambda v: "True" if v else "False", "f": lambda v: f"{v:g}"}.get(array.dtype.kind, str)

    def show(a, depth):
        if a.ndim == 0:
            return item(a[()])
        n = a.shape[0]
        cut = 0 <= summarize < n and n > 2 * summarize
        index = list(range(summarize)) + [None] + list(range(n - summarize, n)) if cut else list(range(n))
        parts = ["..." if i is None else show(a[i, ...], depth + 1) for i in index]
        joiner = " " if a.ndim == 1 else "\n" * (a.ndim - 1) + " " * (depth + 1)
        return "[" + joiner.join(parts) + "]"

    return show(array, 0)


def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001 (TensorFlow's name)
    """template with each placeholder replaced by the next input tensor, printed as tf.print prints it."""
    if not isinstance(inputs, (list, tuple)):
        inputs = [inputs]
    text = _text(template, "template").decode()
    parts = text.split(placeholder)
    if _builtins.len(parts) - 1 != _builtins.len(inputs):
        raise ValueError(f"tf.strings.format: the template has {_builtins.len(parts) - 1} placeholders but "
                         f"{_builtins.len(inputs)} inputs were given; make them match")
    out = parts[0]
    for value, rest in zip(inputs, parts[1:]):
        out += _summary(value, int(summarize)) + rest
    return _StringTensor(_np.array(out.encode(), dtype=object))


# ---- hashing -------------------------------------------------------------------------------------------------------

_K0, _K1, _K2 = 0xC3A5C85C97CB3127, 0xB492B66FBE98F273, 0x9AE16A3B2F90404F


def _fetch64(s, i):
    return int.from_bytes(s[i:i + 8], "little")


def _rotr(v, r):
    return ((v >> r) | (v << (64 - r))) & _M64


def _shift_mix(v):
    return v ^ (v >> 47)


def _mix16(u, v, mul):
    a = ((u ^ v) * mul) & _M64
    a ^= a >> 47
    b = ((v ^ a) * mul) & _M64
    b ^= b >> 47
    return (b * mul) & _M64


def _fp_upto16(s, n):
    if n >= 8:
        mul = _K2 + n * 2
        a = (_fetch64(s, 0) + _K2) & _M64
        b = _fetch64(s, n - 8)
        return _mix16((_rotr(b, 37) * mul + a) & _M64, ((_rotr(a, 25) + b) * mul) & _M64, mul)
    if n >= 4:
        return _mix16(n + (int.from_bytes(s[:4], "little") << 3), int.from_bytes(s[n - 4:n], "little"), _K2 + n * 2)
    if n > 0:
        y = (s[0] + (s[n >> 1] << 8)) & 0xFFFFFFFF
        z = (n + (s[n - 1] << 2)) & 0xFFFFFFFF
        return (_shift_mix(((y * _K2) ^ (z * _K0)) & _M64) * _K2) & _M64
    return _K2


def _fp_upto32(s, n):
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K1) & _M64
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M64
    d = (_fetch64(s, n - 16) * _K2) & _M64
    return _mix16((_rotr((a + b) & _M64, 43) + _rotr(c, 30) + d) & _M64,
                  (a + _rotr((b + _K2) & _M64, 18) + c) & _M64, mul)


def _fp_upto64(s, n):
    mul = _K2 + n * 2
    a = (_fetch64(s, 0) * _K2) & _M64
    b = _fetch64(s, 8)
    c = (_fetch64(s, n - 8) * mul) & _M64
    d = (_fetch64(s, n - 16) * _K2) & _M64
    y = (_rotr((a + b) & _M64, 43) + _rotr(c, 30) + d) & _M64
    z = _mix16(y, (a + _rotr((b + _K2) & _M64, 18) + c) & _M64, mul)
    e = (_fetch64(s, 16) * mul) & _M64
    f = _fetch64(s, 24)
    g = ((y + _fetch64(s, n - 32)) * mul) & _M64
    h = ((z + _fetch64(s, n - 24)) * mul) & _M64
    return _mix16((_rotr((e + f) & _M64, 43) + _rotr(g, 30) + h) & _M64, (e + _rotr((f + a) & _M64, 18) + g) & _M64,
                  mul)


def _weak32(s, i, a, b):
    w, x, y, z = (_fetch64(s, i + k) for k in (0, 8, 16, 24))
    a = (a + w) & _M64
    b = _rotr((b + a + z) & _M64, 21)
    c = a
    a = (a + x + y) & _M64
    b = (b + _rotr(a, 44)) & _M64
    return (a + z) & _M64, (b + c) & _M64


def _fp_step(s, i, x, y, z, v, w, mul, last):
    """One 64-byte block of FarmHash's long-string loop; `last` is the final block's extra mixing."""
    x = (_rotr((x + y + v[0] + _fetch64(s, i + 8)) & _M64, 37) * mul) & _M64
    y = (_rotr((y + v[1] + _fetch64(s, i + 48)) & _M64, 42) * mul) & _M64
    x ^= (w[1] * (9 if last else 1)) & _M64
    y = (y + v[0] * (9 if last else 1) + _fetch64(s, i + 40)) & _M64
    z = (_rotr((z + w[0]) & _M64, 33) * mul) & _M64
    v = _weak32(s, i, (v[1] * mul) & _M64, (x + w[0]) & _M64)
    w = _weak32(s, i + 32, (z + w[1]) & _M64, (y + _fetch64(s, i + 16)) & _M64)
    return z, y, x, v, w  # x and z swap after every block


def fingerprint64(s):
    """FarmHash's Fingerprint64 of bytes (farmhashna::Hash64), what TF's to_hash_bucket_fast and tf.fingerprint
    compute; checked against TensorFlow in test_strings.py."""
    n = len(s)
    if n <= 16:
        return _fp_upto16(s, n)
    if n <= 32:
        return _fp_upto32(s, n)
    if n <= 64:
        return _fp_upto64(s, n)
    seed = 81
    y = (seed * _K1 + 113) & _M64
    z = (_shift_mix((y * _K2 + 113) & _M64) * _K2) & _M64
    v, w = (0, 0), (0, 0)
    x = (seed * _K2 + _fetch64(s, 0)) & _M64
    end = ((n - 1) // 64) * 64
    for i in range(0, end, 64):
        x, y, z, v, w = _fp_step(s, i, x, y, z, v, w, _K1, False)
    mul = _K1 + ((z & 0xFF) << 1)
    w0 = (w[0] + ((n - 1) & 63)) & _M64
    v = ((v[0] + w0) & _M64, v[1])
    w = ((w0 + v[0]) & _M64, w[1])
    x, y, z, v, w = _fp_step(s, end + ((n - 1) & 63) - 63, x, y, z, v, w, mul, True)
    return _mix16((_mix16(v[0], w[0], mul) + _shift_mix(y) * _K0 + z) & _M64, (_mix16(v[1], w[1], mul) + x) & _M64,
                  mul)


def _rotl(v, r):
    return ((v << r) | (v >> (64 - r))) & _M64


def _sip_rounds(v, n):
    v0, v1, v2, v3 = v
    for _ in range(n):
        v0 = (v0 + v1) & _M64
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _M64
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _M64
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _M64
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash24(key, s):
    """SipHash-2-4 of bytes under a key of two 64-bit words, TF's to_hash_bucket_strong."""
    k0, k1 = key
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]
    n = len(s)
    blocks = [_fetch64(s, i) for i in range(0, n - n % 8, 8)]
    blocks.append(int.from_bytes(s[n - n % 8:], "little") | ((n & 0xFF) << 56))
    for m in blocks:
        v[3] ^= m
        v = _sip_rounds(v, 2)
        v[0] ^= m
    v[2] ^= 0xFF
    v = _sip_rounds(v, 4)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def _buckets(num_buckets, op):
    if int(num_buckets) < 1:
        raise _errors.InvalidArgumentError(f"tf.strings.{op}: num_buckets must be at least 1, got {num_buckets}")
    return int(num_buckets)


def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """Fingerprint64(s) mod num_buckets for each string, int64, TF's values."""
    n = _buckets(num_buckets, "to_hash_bucket_fast")
    return _measure(lambda s: fingerprint64(s) % n, input, _dtypes.int64)


def to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """SipHash-2-4(key, s) mod num_buckets for each string, int64, TF's values."""
    n = _buckets(num_buckets, "to_hash_bucket_strong")
    if len(key) != 2:
        raise _errors.InvalidArgumentError(f"tf.strings.to_hash_bucket_strong: key must be two integers, got {key}")
    words = tuple(int(k) & _M64 for k in key)
    return _measure(lambda s: siphash24(words, s) % n, input, _dtypes.int64)


# ---- Unicode -------------------------------------------------------------------------------------------------------

_ENCODINGS = {"UTF-8": "utf-8", "UTF-16-BE": "utf-16-be", "UTF-32-BE": "utf-32-be"}
_ERRORS = ("replace", "ignore", "strict")


def _codec(encoding, what):
    if encoding not in _ENCODINGS:
        raise _errors.InvalidArgumentError(f"{what} must be one of {', '.join(_ENCODINGS)}, got {encoding!r}")
    return _ENCODINGS[encoding]


def _errors_mode(errors):
    if errors not in _ERRORS:
        raise _errors.InvalidArgumentError(f"errors must be one of {', '.join(_ERRORS)}, got {errors!r}")
    return errors


def _mark_invalid(error):
    """A decode error handler: each bad sequence (the same spans as 'replace') becomes a lone surrogate, which no
    valid input decodes to, so that it can become replacement_char."""
    return "\uDC00", error.end


_codecs.register_error("lockstep.strings.mark", _mark_invalid)


def _code_points(s, codec, errors, replacement_char, replace_control_characters):
    try:
        text = s.decode(codec, {"strict": "strict", "ignore": "ignore"}.get(errors, "lockstep.strings.mark"))
    except UnicodeDecodeError as e:
        raise _errors.InvalidArgumentError(f"Invalid formatting on input string {s!r}: {e.reason}; decode with "
                                           "errors='replace' or 'ignore'") from None
    points = [replacement_char if c == "\uDC00" else ord(c) for c in text]
    if replace_control_characters:
        points = [replacement_char if p < 0x20 or 0x7F <= p < 0xA0 else p for p in points]
    return points


def _points_list(points):
    return _numbers(_np.asarray(points, dtype=_np.int32), _dtypes.int32)


def unicode_decode(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                   replace_control_characters=False, name=None):
    """Each string's Unicode code points, int32: a 1-D tensor for a scalar, a RaggedTensor for more."""
    codec, mode = _codec(input_encoding, "input_encoding"), _errors_mode(errors)
    return _pieces(lambda s: _code_points(s, codec, mode, int(replacement_char), replace_control_characters),
                   input, _points_list, "unicode_decode")


def unicode_split(input, input_encoding, errors="replace", replacement_char=65533, name=None):  # noqa: A002
    """Each string as its characters, each encoded in input_encoding."""
    codec, mode = _codec(input_encoding, "input_encoding"), _errors_mode(errors)

    def chars(s):
        return [_encode_point(p, codec, mode, int(replacement_char))
                for p in _code_points(s, codec, mode, int(replacement_char), False)]

    return _pieces(chars, input, _byte_list, "unicode_split")


def _encode_point(p, codec, errors, replacement_char):
    if 0 <= p <= 0x10FFFF and not 0xD800 <= p <= 0xDFFF:
        return chr(p).encode(codec)
    if errors == "strict":
        raise _errors.InvalidArgumentError(f"code point {p} is not a valid Unicode character; encode with "
                                           "errors='replace' or 'ignore'")
    return b"" if errors == "ignore" else chr(replacement_char).encode(codec)


def unicode_encode(input, output_encoding, errors="replace", replacement_char=65533, name=None):  # noqa: A002
    """Code points (the innermost dimension of an int tensor or RaggedTensor) encoded as strings, one rank lower."""
    codec, mode = _codec(output_encoding, "output_encoding"), _errors_mode(errors)

    def encode(points):
        return b"".join(_encode_point(int(p), codec, mode, int(replacement_char)) for p in points)

    if _is_ragged(input):
        if _is_ragged(input.values):
            return input.with_values(unicode_encode(input.values, output_encoding, errors, replacement_char)) if \
                hasattr(input, "with_values") else type(input).from_row_splits(
                    unicode_encode(input.values, output_encoding, errors, replacement_char), input.row_splits)
        points, splits = _np.asarray(input.values.numpy()), _np.asarray(input.row_splits.numpy())
        return _strings([encode(points[splits[i]:splits[i + 1]]) for i in range(len(splits) - 1)])
    points = _number_array(input)
    if points.dtype.kind not in "iu":
        raise TypeError(f"tf.strings.unicode_encode: input must hold int32 code points, got {points.dtype}")
    if points.ndim == 0:
        raise ValueError("tf.strings.unicode_encode: input must have rank 1 or more (code points on its last axis)")
    out = _np.empty(points.shape[:-1], dtype=object)
    out.reshape(-1)[:] = [encode(row) for row in points.reshape(-1, points.shape[-1])] if out.size else []
    return _StringTensor(out)


def unicode_transcode(input, input_encoding, output_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                      replace_control_characters=False, name=None):
    """Each string re-encoded from input_encoding to output_encoding."""
    source, target = _codec(input_encoding, "input_encoding"), _codec(output_encoding, "output_encoding")
    mode = _errors_mode(errors)

    def transcode(s):
        points = _code_points(s, source, mode, int(replacement_char), replace_control_characters)
        return b"".join(_encode_point(p, target, mode, int(replacement_char)) for p in points)

    return _map(transcode, input)


_unimplemented.install(globals(), "tf.strings")
