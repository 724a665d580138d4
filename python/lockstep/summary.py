"""tf.summary: scalars, histograms and text in TensorBoard event files, written by lockstep's C++ writer
(train/summary.h), with TensorFlow's default writer, default step and record_if.

The default writer, step and recording condition are per thread, as TensorFlow's are; a thread that has not set
one of its own uses the main thread's, so the replicas that a strategy runs on threads write where the program's
`with writer.as_default():` says, as TensorFlow copies them to its replica threads.
"""
import atexit as _atexit
import contextlib as _contextlib
import threading as _threading
import types as _types
import weakref as _weakref

import numpy as _np

from . import _lockstep, _unimplemented

_cc = _lockstep.summary
_UNSET = object()


class _Defaults:
    def __init__(self, writer=None, step=None, recording=True):
        self.writer, self.step, self.recording = writer, step, recording


_main = _Defaults()
_local = _threading.local()


def _get(field):
    if _threading.current_thread() is not _threading.main_thread():
        value = getattr(_local, field, _UNSET)
        if value is not _UNSET:
            return value
    return getattr(_main, field)


def _set(field, value):
    """Sets this thread's default; returns the value it replaces, for _restore."""
    target = _main if _threading.current_thread() is _threading.main_thread() else _local
    previous = getattr(target, field, _UNSET)
    setattr(target, field, value)
    return previous


def _restore(field, previous):
    if previous is _UNSET:
        delattr(_local, field)
    else:
        _set(field, previous)


class SummaryWriter:
    """tf.summary.SummaryWriter: what create_file_writer and create_noop_writer return."""

    def set_as_default(self, step=None):
        """Makes this the default writer of this thread (and `step` its default step, when given)."""
        self._check_open()
        _set("writer", self)
        if step is not None:
            _set("step", step)

    @_contextlib.contextmanager
    def as_default(self, step=None):
        """Makes this the default writer (and `step` the default step) inside the `with` block; flushes on exit."""
        self._check_open()
        previous_writer = _set("writer", self)
        previous_step = _set("step", step) if step is not None else None
        try:
            yield self
        finally:
            _restore("writer", previous_writer)
            if step is not None:
                _restore("step", previous_step)
            self.flush()

    def _check_open(self):
        pass

    def init(self):
        pass

    def flush(self):
        pass

    def close(self):
        pass


class _FileWriter(SummaryWriter):
    def __init__(self, writer):
        self._writer = writer
        self._closed = False
        _file_writers.add(self)

    def _check_open(self):
        if self._closed:
            raise RuntimeError(f"SummaryWriter {self!r} is already closed")

    def flush(self):
        if not self._closed:
            self._writer.flush()

    def close(self):
        self._writer.close()
        self._closed = True

    def __repr__(self):
        return f"<tf.summary.SummaryWriter {self._writer.path}>"


# Python does not free what a program still holds at exit: the events such writers hold are written out here.
_file_writers = _weakref.WeakSet()
_atexit.register(lambda: [writer.flush() for writer in list(_file_writers)])


class _NoopWriter(SummaryWriter):
    """Writes nothing: summaries under it return False (tf.summary.create_noop_writer)."""


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None, name=None,
                       experimental_trackable=False, experimental_mesh=None):
    """A writer of a new event file in `logdir` (made with its parents); None gives a writer of nothing."""
    if experimental_mesh is not None:
        raise NotImplementedError(_unimplemented.message("tf.summary.create_file_writer(experimental_mesh=...)"))
    if logdir is None:
        return _NoopWriter()
    import os

    return _FileWriter(_cc.create_file_writer(os.fspath(logdir), 10 if max_queue is None else int(max_queue),
                                              120000 if flush_millis is None else int(flush_millis),
                                              ".v2" if filename_suffix is None else filename_suffix))


def create_noop_writer():
    return _NoopWriter()


@_contextlib.contextmanager
def record_if(condition):
    """Summaries inside the block are written only while `condition` (a bool, a boolean tensor or a callable
    returning one, evaluated at each summary) holds."""
    previous = _set("recording", condition)
    try:
        yield
    finally:
        _restore("recording", previous)


def _recording():
    condition = _get("recording")
    return bool(condition() if callable(condition) else condition)


def should_record_summaries():
    writer = _get("writer")
    return isinstance(writer, _FileWriter) and _recording()


def _writer_and_step(step):
    """This thread's file writer and the summary's step, or (None, None) when nothing is to be written."""
    if not should_record_summaries():
        return None, None
    writer = _get("writer")
    writer._check_open()
    if step is None:
        step = _get("step")
    if step is None:
        raise ValueError("No step set. Please specify one either through the `step` argument or through "
                         "tf.summary.experimental.set_step()")
    return writer._writer, int(step)


def _numpy(data):
    return _np.asarray(data.numpy() if hasattr(data, "numpy") else data)


def _result(written):
    from . import _core

    return _core.constant(bool(written))


def scalar(name, data, step=None, description=None):
    """Writes a float32 scalar for the scalars dashboard. lockstep does not write `description`."""
    writer, step = _writer_and_step(step)
    if writer is None:
        return _result(False)
    value = _numpy(data)
    if value.size != 1:
        raise ValueError(f"Expected scalar shape, saw shape: {value.shape}.")
    return _result(_cc.scalar(name, float(value.reshape(())), step, writer))


def histogram(name, data, step=None, buckets=None, description=None):
    """Writes the values of `data` in `buckets` (30) equal-width buckets for the histograms dashboard."""
    writer, step = _writer_and_step(step)
    if writer is None:
        return _result(False)
    return _result(_cc.histogram(name, data, step, writer, 30 if buckets is None else int(buckets)))


def text(name, data, step=None, description=None):
    """Writes a (Markdown) string for the text dashboard."""
    writer, step = _writer_and_step(step)
    if writer is None:
        return _result(False)
    value = data if isinstance(data, (str, bytes)) else _numpy(data)
    if isinstance(value, _np.ndarray):
        if value.dtype.kind not in "SU":
            raise TypeError(f"tensor must be of type tf.string; got tf.{value.dtype.name}")
        if value.ndim != 0:
            raise NotImplementedError(_unimplemented.message("tf.summary.text of a non-scalar string tensor"))
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode()
    return _result(_cc.text(name, value, step, writer))


def flush(writer=None, name=None):
    """Writes out what `writer` (or the default writer) holds."""
    writer = _get("writer") if writer is None else writer
    if writer is not None:
        writer.flush()


def _set_step(step):
    """Sets this thread's default step: an int, or a tf.Variable read at each summary."""
    _set("step", step)


def _get_step():
    return _get("step")


@_contextlib.contextmanager
def _summary_scope(name, default_name="summary", values=None):
    """Yields (tag, scope) for a summary named `name`; lockstep's name scopes add no prefix."""
    tag = name or default_name
    yield tag, tag + "/"


experimental = _types.ModuleType(f"{__name__}.experimental", "tf.summary.experimental")
experimental.set_step, experimental.get_step, experimental.summary_scope = _set_step, _get_step, _summary_scope
_unimplemented.install(experimental.__dict__, "tf.summary.experimental")
_unimplemented.install(globals(), "tf.summary")
