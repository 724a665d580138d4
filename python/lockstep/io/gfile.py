"""tf.io.gfile over lockstep::io::gfile (core/gfile.h): local paths, TensorFlow's results and error classes."""
import os as _os

from .. import _unimplemented
from .._lockstep import io as _io

_g = _io.gfile


def _path(p):
    """A path as TF takes it: str, bytes, os.PathLike or a scalar tf.string (what a dataset's map function gets)."""
    if hasattr(p, "_cpp_parts") and hasattr(p, "ndim"):  # a StringTensor
        if p.ndim != 0:
            raise ValueError(f"a file name must be a scalar string, got a string tensor of shape {list(p.shape)}")
        p = bytes(p)
    p = _os.fspath(p)
    return p.decode() if isinstance(p, bytes) else p


def exists(path):
    return _g.exists(_path(path))


def isdir(path):
    return _g.isdir(_path(path))


def makedirs(path):
    _g.makedirs(_path(path))


def mkdir(path):
    _g.mkdir(_path(path))


def rmtree(path):
    _g.rmtree(_path(path))


def remove(path):
    _g.remove(_path(path))


def rename(src, dst, overwrite=False):
    _g.rename(_path(src), _path(dst), bool(overwrite))


def copy(src, dst, overwrite=False):
    _g.copy(_path(src), _path(dst), bool(overwrite))


def glob(pattern):
    if isinstance(pattern, (list, tuple)):
        return [m for p in pattern for m in _g.glob(_path(p))]
    return _g.glob(_path(pattern))


def listdir(path):
    return _g.listdir(_path(path))


def walk(top, topdown=True, onerror=None):
    """(dirpath, dirnames, filenames) for each directory under top, as os.walk (and TF) yield them."""
    try:
        entries = _g.walk(_path(top), bool(topdown))
    except Exception as e:  # an unreadable directory: TF hands it to onerror
        if onerror is None:
            raise
        onerror(e)
        return
    yield from entries


def join(path, *paths):
    return _g.join([_path(path)] + [_path(p) for p in paths])


class _Stat:
    """tf.io.gfile.stat's result: length (bytes), mtime_nsec, is_directory."""

    def __init__(self, length, mtime_nsec, is_directory):
        self.length, self.mtime_nsec, self.is_directory = length, mtime_nsec, is_directory

    def __repr__(self):
        return f"FileStatistics(length={self.length}, mtime_nsec={self.mtime_nsec}, is_directory={self.is_directory})"


def stat(path):
    return _Stat(*_g.stat(_path(path)))


def get_registered_schemes():
    return ["file", ""]


class GFile:
    """A file, as tf.io.gfile.GFile: "r" reads str and "rb" bytes; writes take either. Iterating gives lines."""

    def __init__(self, name, mode="r"):
        self._binary = "b" in mode
        self._file = _g.GFile(_path(name), mode)

    name = property(lambda self: self._file.name)
    mode = property(lambda self: self._file.mode)

    def _out(self, data):
        return data if self._binary else data.decode("utf-8")

    def read(self, n=-1):
        return self._out(self._file.read(-1 if n is None else n))

    def readline(self):
        return self._out(self._file.readline())

    def readlines(self):
        return [self._out(line) for line in self._file.readlines()]

    def write(self, file_content):
        if isinstance(file_content, str):
            file_content = file_content.encode("utf-8")
        self._file.write(bytes(file_content))

    def flush(self):
        self._file.flush()

    def close(self):
        self._file.close()

    def seek(self, offset=None, whence=0, position=None):
        self._file.seek(offset if position is None else position, whence)

    def tell(self):
        return self._file.tell()

    def size(self):
        return self._file.size()

    def seekable(self):
        return True

    def __iter__(self):
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    next = __next__

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


Open = GFile
_unimplemented.install(globals(), "tf.io.gfile")
