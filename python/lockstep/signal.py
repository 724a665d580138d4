"""tf.signal: windows, framing and overlap-add (real-valued). The Fourier transforms need complex tensors, which
lockstep does not have: they raise NotImplementedError naming complex64."""
import numpy as _np

from . import _array_ops, _lockstep, _unimplemented, dtypes as _dtypes

_ops = _lockstep.ops
_convert = _ops.convert_to_tensor


def _window(name, a, window_length, periodic, dtype):
    n = int(window_length)
    if n < 0:
        raise ValueError(f"tf.signal.{name}'s window_length must be >= 0, got {n}")
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating:
        raise ValueError(f"tf.signal.{name}'s dtype must be a floating type, got {dtype.name}")
    if n == 1:
        return _convert(_np.ones(1), dtype)
    denominator = n if periodic else n - 1
    w = a - (1 - a) * _np.cos(2 * _np.pi * _np.arange(n) / max(denominator, 1))
    return _convert(w, dtype)


def hann_window(window_length, periodic=True, dtype=_dtypes.float32, name=None):
    return _window("hann_window", 0.5, window_length, periodic, dtype)


def hamming_window(window_length, periodic=True, dtype=_dtypes.float32, name=None):
    return _window("hamming_window", 0.54, window_length, periodic, dtype)


def frame(signal, frame_length, frame_step, pad_end=False, pad_value=0, axis=-1, name=None):
    """Frames of frame_length samples every frame_step samples along `axis` (a gather, so it has a gradient)."""
    x = _convert(signal)
    shape = x._shape_tuple
    axis = int(axis) % len(shape)
    length, step, n = int(frame_length), int(frame_step), shape[axis]
    if length <= 0 or step <= 0:
        raise ValueError(f"tf.signal.frame needs frame_length > 0 and frame_step > 0, got {length} and {step}")
    if pad_end:
        count = -(-n // step)
        padded = (count - 1) * step + length
        paddings = [[0, 0]] * len(shape)
        paddings[axis] = [0, max(0, padded - n)]
        x = _array_ops.pad(x, paddings, constant_values=pad_value)
    else:
        count = max(0, 1 + (n - length) // step)
    starts = _np.arange(count) * step
    index = (starts[:, None] + _np.arange(length)[None, :]).reshape(-1)
    out = _array_ops.gather(x, index, axis=axis)
    s = out._shape_tuple
    return _ops.reshape(out, s[:axis] + [count, length] + s[axis + 1:])


def overlap_and_add(signal, frame_step, name=None):
    """The sum of frames [..., frames, frame_length] laid frame_step apart (the adjoint of frame)."""
    x = _convert(signal)
    shape = x._shape_tuple
    if len(shape) < 2:
        raise ValueError(f"tf.signal.overlap_and_add needs a tensor of rank >= 2, got shape {shape}")
    count, length, step = shape[-2], shape[-1], int(frame_step)
    if step <= 0:
        raise ValueError(f"tf.signal.overlap_and_add needs frame_step > 0, got {step}")
    total = (count - 1) * step + length if count else 0
    batch = shape[:-2]
    b = int(_np.prod(batch, dtype=_np.int64))
    target = (_np.arange(count)[:, None] * step + _np.arange(length)[None, :]).reshape(-1)
    positions = (_np.arange(b)[:, None] * total + target[None, :]).reshape(shape)
    return _array_ops._scatter_flat(x, positions, batch + [total])


_COMPLEX = {"fft", "fft2d", "fft3d", "fftnd", "ifft", "ifft2d", "ifft3d", "ifftnd", "rfft", "rfft2d", "rfft3d",
            "rfftnd", "irfft", "irfft2d", "irfft3d", "irfftnd", "stft", "inverse_stft", "mdct", "inverse_mdct"}

_unimplemented.install(globals(), "tf.signal")
_missing = __getattr__  # noqa: F821 (what install defined)


def __getattr__(name):
    """The transforms to and from complex tensors are missing for a reason worth saying at the point of use."""
    if name in _COMPLEX:
        raise NotImplementedError(f"tf.signal.{name} returns or takes complex64 tensors, which lockstep does not "
                                  "have (see docs/python.md)")
    return _missing(name)
