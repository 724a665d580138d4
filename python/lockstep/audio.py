"""tf.audio: 16-bit PCM WAV files to float32 [frames, channels] samples in [-1, 1) and back, as TensorFlow's
wav codec reads and writes them (a RIFF chunk walk in NumPy)."""
import struct as _struct

import numpy as _np

from . import _lockstep, _unimplemented, errors as _errors
from .io._image import _contents

_ops = _lockstep.ops
_PCM, _EXTENSIBLE = 1, 0xFFFE


def _bad(message):
    return _errors.InvalidArgumentError(f"decode_wav: {message}")


def _chunks(data):
    """(id, payload) of each chunk after the RIFF/WAVE header."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise _bad(f"not a WAV file: expected a RIFF/WAVE header, found {data[:12]!r}")
    at = 12
    while at + 8 <= len(data):
        kind, size = data[at:at + 4], _struct.unpack_from("<I", data, at + 4)[0]
        if at + 8 + size > len(data) and kind != b"data":
            raise _bad(f"the data ends inside the {kind!r} chunk at byte {at}; the file is truncated")
        yield kind, data[at + 8:at + 8 + size], at
        at += 8 + size + (size & 1)  # chunks are padded to even sizes


def _parse(data):
    """(int16 samples [frames, channels], sample rate)."""
    fmt = None
    for kind, payload, at in _chunks(data):
        if kind == b"fmt ":
            if len(payload) < 16:
                raise _bad(f"the fmt chunk has {len(payload)} bytes, fewer than 16")
            tag, channels, rate, _, frame_bytes, bits = _struct.unpack_from("<HHIIHH", payload)
            if tag not in (_PCM, _EXTENSIBLE):
                raise _bad(f"audio format {tag} is not PCM (1) or WAVE_FORMAT_EXTENSIBLE; convert it to 16-bit PCM")
            if bits != 16:
                raise _bad(f"can only read 16-bit WAV files, but received {bits}-bit samples; convert it to 16-bit")
            if channels == 0 or frame_bytes != 2 * channels:
                raise _bad(f"{channels} channels with {frame_bytes} bytes per frame is not 16-bit PCM")
            fmt = channels, rate
        elif kind == b"data":
            if fmt is None:
                raise _bad("the data chunk comes before any fmt chunk")
            size = _struct.unpack_from("<I", data, at + 4)[0]
            if len(payload) < size:
                raise _bad(f"the data ends {size - len(payload)} bytes before its data chunk does; the file is "
                           "truncated")
            channels, rate = fmt
            samples = _np.frombuffer(payload[:len(payload) // (2 * channels) * 2 * channels], "<i2")
            return samples.reshape(-1, channels), rate
    raise _bad("no data chunk found" if fmt else "no fmt chunk found")


def decode_wav(contents, desired_channels=-1, desired_samples=-1, name=None):
    """(audio float32 [frames, channels], sample_rate int32): desired_samples cuts or zero-pads the frames;
    desired_channels takes the first channels, or repeats the last one."""
    samples, rate = _parse(_contents(contents, "decode_wav"))
    channels, frames = int(desired_channels), int(desired_samples)
    audio = samples.astype(_np.float32) / _np.float32(32768)
    if channels > 0:
        audio = audio[:, _np.minimum(_np.arange(channels), audio.shape[1] - 1)]
    if frames >= 0:
        audio = _np.concatenate([audio[:frames], _np.zeros((max(0, frames - len(audio)), audio.shape[1]),
                                                            _np.float32)])
    return _ops.convert_to_tensor(audio, None, None), _ops.convert_to_tensor(_np.int32(rate), None, None)


def encode_wav(audio, sample_rate, name=None):
    """A 16-bit PCM WAV of float [frames, channels] audio, samples clipped to [-1, 1], as a tf.string scalar."""
    from .data import _structure

    audio = _np.asarray(audio.numpy() if hasattr(audio, "numpy") else audio)
    if audio.ndim != 2:
        raise _errors.InvalidArgumentError(f"encode_wav: audio must be 2-dimensional [frames, channels], got shape "
                                           f"{list(audio.shape)}; use tf.expand_dims(audio, -1) for mono")
    if audio.dtype.kind != "f":
        raise TypeError(f"encode_wav: audio must be float32 samples in [-1, 1], got {audio.dtype}")
    rate = int(_np.asarray(sample_rate.numpy() if hasattr(sample_rate, "numpy") else sample_rate))
    if rate <= 0:
        raise _errors.InvalidArgumentError(f"encode_wav: sample_rate must be positive, got {rate}")
    scaled = _np.round(audio.astype(_np.float32) * _np.float32(32768))
    pcm = _np.clip(scaled, -32768, 32767).astype("<i2").tobytes()
    channels = audio.shape[1]
    header = b"RIFF" + _struct.pack("<I", 36 + len(pcm)) + b"WAVEfmt " + _struct.pack(
        "<IHHIIHH", 16, _PCM, channels, rate, rate * channels * 2, channels * 2, 16) + b"data" + _struct.pack(
        "<I", len(pcm))
    return _structure.StringTensor(_np.array(header + pcm, dtype=object))


_unimplemented.install(globals(), "tf.audio")
