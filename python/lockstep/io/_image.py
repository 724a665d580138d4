"""tf.io's image and raw decoders: PNG and JPEG through lockstep/data/images.h (libpng, libjpeg-turbo with TF's
settings), encode_png through zlib, decode_raw through NumPy. tf.image re-exports the image ones."""
import struct as _struct
import zlib as _zlib

import numpy as _np

from .. import dtypes as _dtypes, errors as _errors
from .._lockstep import io as _io, ops as _ops
from ..data import _structure

__all__ = ["decode_image", "decode_jpeg", "decode_png", "decode_raw", "encode_png", "is_jpeg", "extract_jpeg_shape",
           "decode_and_crop_jpeg"]


def _not_implemented(what):
    return NotImplementedError(f"{what} is not implemented by lockstep (see docs/python.md)")


def _contents(contents, op):
    """The bytes of a tf.string scalar (a StringTensor, bytes or str)."""
    if isinstance(contents, _structure.StringTensor):
        if contents.ndim != 0:
            raise _errors.InvalidArgumentError(f"{op}: `contents` must be a scalar string but got shape "
                                               f"{list(contents.shape)}; decode each image (e.g. in Dataset.map)")
        return bytes(contents)
    if isinstance(contents, str):
        return contents.encode()
    if isinstance(contents, (bytes, bytearray, memoryview)):
        return bytes(contents)
    if isinstance(contents, _np.ndarray) and contents.ndim == 0 and contents.dtype.kind in "SO":
        return bytes(contents[()])
    raise TypeError(f"{op}: `contents` must be a tf.string scalar holding the encoded image, got "
                    f"{type(contents).__name__}")


def _decode(contents, channels, op):
    data = _contents(contents, op)
    channels = 0 if channels is None else int(channels)
    try:
        # TF's PNG, JPEG and GIF ops share one kernel that tells the format by its signature: decode_jpeg decodes
        # a PNG too. The channel limit is the op's: 4 is a PNG channel count only.
        if op == "decode_jpeg" and channels == 4:
            raise _errors.InvalidArgumentError("decode_jpeg: JPEG does not support 4 channels; use 0, 1 or 3")
        return _io.decode_image("any", data, channels, op)
    except _errors.DataLossError as e:  # TF calls a corrupt image an invalid argument
        raise _errors.InvalidArgumentError(str(e)) from None


def _integer_dtype(dtype, op):
    dtype = _dtypes.as_dtype(dtype)
    if dtype != _dtypes.uint8:
        raise _not_implemented(f"tf.io.{op} with dtype={dtype.name}")


def decode_png(contents, channels=0, dtype=_dtypes.uint8, name=None):
    """uint8 [height, width, channels]; 16-bit samples keep their high byte (lockstep has no uint16)."""
    _integer_dtype(dtype, "decode_png")
    return _decode(contents, channels, "decode_png")


def decode_jpeg(contents, channels=0, ratio=1, fancy_upscaling=True, try_recover_truncated=False,
                acceptable_fraction=1, dct_method="", name=None):
    if ratio != 1:
        raise _not_implemented(f"tf.io.decode_jpeg with ratio={ratio}")
    if not fancy_upscaling:
        raise _not_implemented("tf.io.decode_jpeg with fancy_upscaling=False")
    if try_recover_truncated or acceptable_fraction != 1:
        raise _not_implemented("tf.io.decode_jpeg with try_recover_truncated or acceptable_fraction")
    if dct_method not in ("", "INTEGER_FAST"):
        raise _not_implemented(f"tf.io.decode_jpeg with dct_method={dct_method!r}")
    return _decode(contents, channels, "decode_jpeg")


def decode_image(contents, channels=None, dtype=_dtypes.uint8, name=None, expand_animations=True):
    """PNG or JPEG as [height, width, channels] (GIF, BMP and WebP raise InvalidArgumentError); a float dtype scales
    the pixels to [0, 1] as tf.image.convert_image_dtype does."""
    image = _decode(contents, channels, "decode_image")
    dtype = _dtypes.as_dtype(dtype)
    if dtype == _dtypes.uint8:
        return image
    from .. import image as _image

    return _image.convert_image_dtype(image, dtype)




def decode_and_crop_jpeg(contents, crop_window, channels=0, ratio=1, fancy_upscaling=True,
                         try_recover_truncated=False, acceptable_fraction=1, dct_method="", name=None):
    """The crop_window [y, x, height, width] of the decoded image (TF decodes only the window: chroma at its edges
    can differ by a few levels)."""
    image = decode_jpeg(contents, channels, ratio, fancy_upscaling, try_recover_truncated, acceptable_fraction,
                        dct_method)
    y, x, h, w = (int(v) for v in _np.asarray(crop_window).reshape(-1))
    height, width = image.shape[0], image.shape[1]
    if y < 0 or x < 0 or h <= 0 or w <= 0 or y + h > height or x + w > width:
        raise _errors.InvalidArgumentError(f"decode_and_crop_jpeg: crop window [{y}, {x}, {h}, {w}] is not inside "
                                           f"the {height}x{width} image")
    return _ops.slice(image, [y, x, 0], [h, w, image.shape[2]])


def is_jpeg(contents, name=None):
    return _ops.convert_to_tensor(_contents(contents, "is_jpeg")[:3] == b"\xff\xd8\xff")


def extract_jpeg_shape(contents, output_type=_dtypes.int32, name=None):
    """[height, width, channels] of the image, decoding it (lockstep reads no header alone)."""
    shape = _decode(contents, 0, "extract_jpeg_shape").shape
    return _ops.convert_to_tensor(_np.asarray(list(shape), _dtypes.as_dtype(output_type).as_numpy_dtype))


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None, name=None):
    """Each string's bytes as a vector of out_type: shape input.shape + [length / itemsize]."""
    out = _dtypes.as_dtype(out_type)
    if out == _dtypes.string or out.as_numpy_dtype is None:
        raise _not_implemented(f"tf.io.decode_raw with out_type={out.name}")
    if isinstance(input_bytes, _structure.StringTensor):
        values = input_bytes._values
    else:
        values = _np.asarray(input_bytes, dtype=object)
    values = _np.vectorize(lambda v: v.encode() if isinstance(v, str) else bytes(v), otypes=[object])(values) \
        if values.size else values
    np_type = _np.dtype(out.as_numpy_dtype).newbyteorder("<" if little_endian else ">")
    size = np_type.itemsize
    flat = list(values.reshape(-1))
    if fixed_length is not None:
        fixed_length = int(fixed_length)
        if fixed_length % size:
            raise _errors.InvalidArgumentError(f"decode_raw: fixed_length {fixed_length} is not a multiple of "
                                               f"{size}, the size of {out.name}")
        flat = [b[:fixed_length].ljust(fixed_length, b"\0") for b in flat]
    lengths = {len(b) for b in flat}
    if len(lengths) > 1:
        raise _errors.InvalidArgumentError("decode_raw: the input strings must all be the same size, got sizes "
                                           f"{sorted(lengths)}; pass fixed_length to pad or truncate them")
    length = lengths.pop() if lengths else 0
    if length % size:
        raise _errors.InvalidArgumentError(f"decode_raw: input has length {length} that is not a multiple of "
                                           f"{size}, the size of {out.name}")
    array = _np.frombuffer(b"".join(flat), dtype=np_type).astype(out.as_numpy_dtype)
    return _ops.convert_to_tensor(array.reshape(values.shape + (length // size,)))


def encode_png(image, compression=-1, name=None):
    """A PNG of a uint8 [height, width, channels] image (1 to 4 channels), as a tf.string scalar. The pixels
    round-trip exactly; the bytes can differ from TF's (another zlib stream)."""
    array = _np.asarray(image)
    if array.dtype != _np.uint8:
        raise _not_implemented(f"tf.io.encode_png of dtype {array.dtype} (lockstep encodes uint8)") \
            if array.dtype == _np.uint16 else TypeError(f"encode_png: image must be uint8, got {array.dtype}; use "
                                                        "tf.image.convert_image_dtype(image, tf.uint8, saturate=True)")
    if array.ndim != 3 or not 1 <= array.shape[2] <= 4:
        raise _errors.InvalidArgumentError(f"encode_png: image must be [height, width, channels] with 1 to 4 "
                                           f"channels, got shape {list(array.shape)}")
    level = int(compression)
    if not -1 <= level <= 9:
        raise _errors.InvalidArgumentError(f"encode_png: compression must be -1 to 9, got {level}")
    height, width, channels = array.shape
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    rows = _np.concatenate([_np.zeros((height, 1), _np.uint8), array.reshape(height, width * channels)], axis=1)

    def chunk(kind, data):
        return _struct.pack(">I", len(data)) + kind + data + _struct.pack(">I", _zlib.crc32(kind + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", _struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0))
           + chunk(b"IDAT", _zlib.compress(rows.tobytes(), level)) + chunk(b"IEND", b""))
    return _structure.StringTensor(_np.array(png, dtype=object))

