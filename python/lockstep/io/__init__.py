"""tf.io: TFRecord files, tf.train.Example parsing and gfile, over lockstep's C++ (data/tfrecord.h, data/example.h,
core/gfile.h). Strings are tf.string StringTensors (see lockstep/data/_structure.py).
"""
import collections as _collections

import numpy as _np

from .. import _unimplemented, dtypes as _dtypes
from .._sparse import SparseTensor  # what a VarLenFeature parses into, tf.sparse's own class
from .._lockstep import io as _io
from ..data import _structure
from ..data._readers import compression_name as _compression_name
from . import gfile  # noqa: F401


class FixedLenFeature(_collections.namedtuple("FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature with a fixed number of values of dtype tf.int64, tf.float32 or tf.string, as TensorFlow's."""

    def __new__(cls, shape, dtype, default_value=None):
        return super().__new__(cls, shape, dtype, default_value)


class VarLenFeature(_collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature with any number of values, parsed into a SparseTensor."""


_DTYPES = ("int64", "float32", "string")


def _spec(features):
    if not isinstance(features, dict) or not features:
        raise ValueError("features must be a non-empty dict mapping feature keys to FixedLenFeature or VarLenFeature")
    spec = {}
    for key, f in features.items():
        if not isinstance(f, (FixedLenFeature, VarLenFeature)):
            raise NotImplementedError(f"feature {key!r}: {type(f).__name__} is not implemented by lockstep (see "
                                      "docs/python.md); use tf.io.FixedLenFeature or tf.io.VarLenFeature")
        dtype = _dtypes.as_dtype(f.dtype)
        if dtype.name not in _DTYPES:
            raise ValueError(f"feature {key!r} has dtype {dtype.name}; an Example holds int64, float32 or string "
                             "features: parse as one of those and tf.cast afterwards")
        if isinstance(f, VarLenFeature):
            spec[key] = ("var", dtype)
            continue
        default = f.default_value
        if default is not None and dtype == _dtypes.string:
            default = _structure.to_leaf(default, _structure.TensorSpec(None, dtype), f"feature {key!r}'s default_value")
        shape = [] if f.shape is None else [int(d) for d in f.shape]
        spec[key] = ("fixed", shape, dtype, default)
    return spec


def _record(serialized, what):
    if isinstance(serialized, _structure.StringTensor):
        if serialized.ndim != 0:
            raise ValueError(f"{what}: serialized must be a scalar string, got shape {list(serialized.shape)}; use "
                             "tf.io.parse_example for a batch")
        return bytes(serialized)
    if isinstance(serialized, str):
        return serialized.encode()
    if isinstance(serialized, (bytes, bytearray, memoryview)):
        return bytes(serialized)
    raise TypeError(f"{what}: serialized must be a serialized tf.train.Example (a tf.string), got "
                    f"{type(serialized).__name__}")


def _result(parsed, spec):
    dense, sparse = parsed
    out = {}
    for key, (kind, *rest) in spec.items():
        dtype = rest[-2] if kind == "fixed" else rest[0]
        if kind == "fixed":
            out[key] = dense[key]
        else:
            indices, values, dense_shape = sparse[key]
            if dtype == _dtypes.string:
                values = _structure.StringTensor(_np.array(values + [None], dtype=object)[:-1])
            out[key] = SparseTensor(indices, values, dense_shape)
    return out


def parse_single_example(serialized, features, example_names=None, name=None):
    """The features of one serialized tf.train.Example, as a dict."""
    spec = _spec(features)
    return _result(_io.parse_single_example(_record(serialized, "parse_single_example"), spec), spec)


def parse_example(serialized, features, example_names=None, name=None):
    """The features of a batch (a 1-D tf.string) of serialized Examples, each with a leading batch axis."""
    if isinstance(serialized, _structure.StringTensor):
        if serialized.ndim != 1:
            raise ValueError(f"parse_example: serialized must be a 1-D string tensor, got shape "
                             f"{list(serialized.shape)}; use tf.io.parse_single_example for one record")
        records = list(serialized.numpy())
    else:
        records = [_record(s, "parse_example") for s in serialized]
    spec = _spec(features)
    return _result(_io.parse_example(records, spec), spec)


class TFRecordOptions:
    """Options of TFRecordWriter and tf.data.TFRecordDataset: lockstep reads compression_type ("" or "GZIP"); the
    zlib tuning arguments are accepted and change nothing in the records."""

    compression_type_map = {"": "", "GZIP": "GZIP"}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None, output_buffer_size=None,
                 window_bits=None, compression_level=None, compression_method=None, mem_level=None,
                 compression_strategy=None):
        self.compression_type = _compression_name(compression_type)

    @classmethod
    def get_compression_type_string(cls, options):
        if options is None:
            return ""
        return options.compression_type if isinstance(options, TFRecordOptions) else _compression_name(options)


class TFRecordWriter:
    """Writes records to a TFRecord file, as tf.io.TFRecordWriter (a context manager; close() to see errors)."""

    def __init__(self, path, options=None):
        import os

        self._writer = _io.TFRecordWriter(os.fspath(path), TFRecordOptions.get_compression_type_string(options))

    def write(self, record):
        self._writer.write(_record(record, "TFRecordWriter.write"))

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_file(filename, name=None):
    """The contents of a file, as a tf.string scalar."""
    with gfile.GFile(filename, "rb") as f:
        return _structure.StringTensor(_np.array(f.read(), dtype=object))


def write_file(filename, contents, name=None):
    with gfile.GFile(filename, "wb") as f:
        f.write(bytes(contents) if isinstance(contents, _structure.StringTensor) else contents)


_unimplemented.install(globals(), "tf.io")
from ._image import *  # noqa: E402,F401,F403 (the image decoders: io/_image.py)
from ._csv import decode_csv  # noqa: E402,F401
