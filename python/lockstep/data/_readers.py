"""tf.data.TFRecordDataset and TextLineDataset over lockstep::data's readers: records are read, framed and
CRC-checked in C++, lines split there."""
import os

import numpy as _np

from . import _structure
from ._dataset import _C, Dataset
from ._structure import Structure, TensorSpec

_COMPRESSION = {None: "", "": "", "GZIP": "GZIP"}


def compression_name(compression_type):
    """TF's compression_type ("", None, "GZIP"; ZLIB is not supported) as the C++ side spells it."""
    if compression_type not in _COMPRESSION:
        raise ValueError(f"compression_type {compression_type!r} is not supported by lockstep; use '' (none) or 'GZIP'")
    return _COMPRESSION[compression_type]


def filenames_of(filenames, reader="TFRecordDataset"):
    """A file name or a list, tuple, array or tensor of them (str, bytes or PathLike) as a list of str."""
    if isinstance(filenames, Dataset):
        filenames = [_structure.numpy_of(f) for f in filenames]
    elif isinstance(filenames, _structure.StringTensor):
        filenames = filenames.numpy()
    if isinstance(filenames, (str, bytes, os.PathLike)):
        filenames = [filenames]
    out = []
    for f in _np.asarray(filenames, dtype=object).reshape(-1):
        f = os.fspath(f)
        out.append(f.decode() if isinstance(f, bytes) else f)
    if not out:
        raise ValueError(f"{reader}: filenames is empty; pass at least one file")
    return out


class TFRecordDataset(Dataset):
    """The records of TFRecord files, as tf.data.TFRecordDataset: each element is a tf.string scalar."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        cpp = _C.Dataset.TFRecordDataset(filenames_of(filenames), compression_name(compression_type))
        super().__init__(cpp, Structure(TensorSpec([], _structure.string)))


class TextLineDataset(Dataset):
    """The lines of text files, as tf.data.TextLineDataset: each element is a tf.string scalar without its newline."""

    def __init__(self, filenames, compression_type=None, buffer_size=None, num_parallel_reads=None, name=None):
        cpp = _C.Dataset.TextLineDataset(filenames_of(filenames, "TextLineDataset"), compression_name(compression_type))
        super().__init__(cpp, Structure(TensorSpec([], _structure.string)))
