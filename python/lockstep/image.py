"""tf.image: resizing, cropping, flipping, colour adjustments and conversions for [h, w, c] and [n, h, w, c] images.
What TF differentiates (resize, flips, crops, pads, brightness, contrast, gamma, grayscale, rgb_to_hsv, sobel...) is
built from lockstep's recorded ops; resize kernels are separable, so each method is a gather-and-lerp (bilinear,
nearest) or a [out, in] weight matrix per axis. Colour-space kernels without a TF gradient run in NumPy."""
import math as _math

import numpy as _np

from . import _lockstep, _unimplemented, dtypes as _dtypes, errors as _errors, random as _random
from .io._image import (decode_image, decode_jpeg, decode_png, encode_png, is_jpeg,  # noqa: F401
                        extract_jpeg_shape, decode_and_crop_jpeg)

_ops = _lockstep.ops
_F32 = _np.float32


def _tensor(x):
    return _ops.convert_to_tensor(x, None, None)


def _dtype(t):
    return _dtypes.as_dtype(t.dtype)


def _rank(t):
    return len(t._shape_tuple)


def _batched(image, what="image"):
    """(the image as [n, h, w, c], whether it was one [h, w, c] image)."""
    image = _tensor(image)
    if _rank(image) not in (3, 4):
        raise ValueError(f"'{what}' (shape {tuple(image._shape_tuple)}) must have either 3 or 4 dimensions.")
    if _rank(image) == 3:
        return _ops.reshape(image, [1] + list(image._shape_tuple)), True
    return image, False


def _unbatched(images, single):
    return _ops.reshape(images, list(images._shape_tuple[1:])) if single else images


def _at_least_3d(image):
    image = _tensor(image)
    if _rank(image) < 3:
        raise ValueError(f"'image' (shape {tuple(image._shape_tuple)}) must be at least three-dimensional.")
    return image


def _int(value, what):
    try:
        return int(_np.asarray(value).reshape(()))
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be an integer, got {value!r}") from None


def _take(t, axis, indices):
    """t's slices along `axis` at `indices` (a differentiable gather on any axis)."""
    indices = _np.asarray(indices, _np.int64)
    if axis == 0:
        return _ops.gather(t, indices)
    perm = list(range(_rank(t)))
    perm[0], perm[axis] = perm[axis], perm[0]
    return _ops.transpose(_ops.gather(_ops.transpose(t, perm), indices), perm)


def _reverse(t, axis):
    return _take(t, axis, _np.arange(t._shape_tuple[axis] - 1, -1, -1))


def _along(t, axis, matrix):
    """Applies the [out, in] float32 `matrix` to axis `axis` of float32 t (a separable resize pass)."""
    shape = list(t._shape_tuple)
    perm = [axis] + [a for a in range(len(shape)) if a != axis]
    moved = _ops.reshape(_ops.transpose(t, perm), [shape[axis], -1])
    out = _ops.matmul(_ops.convert_to_tensor(matrix.astype(_F32), None, None), moved, False, False)
    out = _ops.reshape(out, [matrix.shape[0]] + [shape[a] for a in perm[1:]])
    return _ops.transpose(out, [perm.index(a) for a in range(len(shape))])


# ---- dtype conversion ----

def convert_image_dtype(image, dtype, saturate=False, name=None):
    """Integers are fractions of their dtype's max; floats are [0, 1]. Float to integer scales by max + 0.5 and
    truncates; saturate clips to the target range first (without it, out-of-range values wrap as TF's cast does)."""
    image = _tensor(image)
    dtype = _dtypes.as_dtype(dtype)
    if not dtype.is_floating and not dtype.is_integer:
        raise AttributeError("dtype must be either floating point or integer")
    src = _dtype(image)
    if not src.is_floating and not src.is_integer:
        raise AttributeError("image dtype must be either floating point or integer")
    if src == dtype:
        return _ops.identity(image)
    if dtype.is_floating:  # differentiable: a cast and a scale
        out = _ops.cast(image, dtype._lockstep_dtype)
        return out if src.is_floating else _ops.multiply(out, 1.0 / float(src.max))
    values = image.numpy()
    out_type = dtype.as_numpy_dtype
    info = _np.iinfo(out_type)
    if src.is_floating:
        scaled = values * values.dtype.type(float(info.max) + 0.5)
    elif _np.iinfo(values.dtype).max > info.max:
        scaled = values // ((int(_np.iinfo(values.dtype).max) + 1) // (int(info.max) + 1))
    else:
        scale = (int(info.max) + 1) // (int(_np.iinfo(values.dtype).max) + 1)
        cast = _np.clip(values, info.min, info.max) if saturate else values
        return _tensor(cast.astype(out_type) * out_type(scale))
    if saturate:
        scaled = _np.clip(scaled.astype(_np.float64) if src.is_floating else scaled, info.min, info.max)
    with _np.errstate(invalid="ignore"):
        return _tensor(scaled.astype(out_type))


def _to_float(image):
    """The float image TF's colour adjustments compute on: float32 images as they are, others converted."""
    return image if _dtype(image) == _dtypes.float32 else convert_image_dtype(image, _dtypes.float32)


def _from_float(image, dtype, saturate=True):
    return image if _dtype(image) == dtype else convert_image_dtype(image, dtype, saturate=saturate)


# ---- resize ----

class ResizeMethod:
    """The names of tf.image.resize's methods."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


def _bilinear_taps(n_in, n_out):
    """(lower, upper, weight) per output index, with half-pixel centers in float32 as TF's kernel computes them."""
    x = (_np.arange(n_out, dtype=_F32) + _F32(0.5)) * (_F32(n_in) / _F32(n_out)) - _F32(0.5)
    lower = _np.floor(x)
    return (_np.maximum(lower, 0).astype(_np.int64), _np.minimum(_np.ceil(x), n_in - 1).astype(_np.int64),
            (x - lower).astype(_F32))


def _nearest_indices(n_in, n_out):
    x = _np.floor((_np.arange(n_out, dtype=_F32) + _F32(0.5)) * (_F32(n_in) / _F32(n_out)))
    return _np.clip(x, 0, n_in - 1).astype(_np.int64)


def _lerp_along(t, axis, n_out):
    lower, upper, weight = _bilinear_taps(t._shape_tuple[axis], n_out)
    low, high = _take(t, axis, lower), _take(t, axis, upper)
    shape = [1] * _rank(t)
    shape[axis] = n_out
    return _ops.add(low, _ops.multiply(_ops.subtract(high, low), _tensor(weight.reshape(shape))))


# Keys' cubic (a = -0.5) sampled at 1/1024 steps, as TF's resize_bicubic reads its weights from such a table.
_CUBIC_TABLE_SIZE = 1024


def _keys_cubic_table():
    x = _np.arange(_CUBIC_TABLE_SIZE + 1, dtype=_np.float64) / _CUBIC_TABLE_SIZE
    a = -0.5
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
    return near.astype(_F32), far.astype(_F32)


def _bicubic_matrix(n_in, n_out):
    near, far = _keys_cubic_table()
    pos = (_np.arange(n_out, dtype=_F32) + _F32(0.5)) * (_F32(n_in) / _F32(n_out)) - _F32(0.5)
    base = _np.floor(pos)
    offset = _np.rint((pos - base) * _F32(_CUBIC_TABLE_SIZE)).astype(_np.int64)
    base = base.astype(_np.int64)
    taps = _np.stack([base - 1, base, base + 1, base + 2], axis=1)
    weights = _np.stack([far[offset], near[offset], near[_CUBIC_TABLE_SIZE - offset],
                         far[_CUBIC_TABLE_SIZE - offset]], axis=1).astype(_np.float64)
    weights[(taps < 0) | (taps >= n_in)] = 0  # samples outside the image weigh nothing; the rest renormalize
    weights /= weights.sum(axis=1, keepdims=True)
    matrix = _np.zeros((n_out, n_in))
    _np.add.at(matrix, (_np.repeat(_np.arange(n_out), 4), _np.clip(taps, 0, n_in - 1).reshape(-1)),
               weights.reshape(-1))
    return matrix


def _area_matrix(n_in, n_out):
    """Each output pixel averages the input span it covers, partial pixels by their covered fraction."""
    scale = float(_F32(n_in) / _F32(n_out))
    matrix = _np.zeros((n_out, n_in))
    for o in range(n_out):
        start, end = o * scale, (o + 1) * scale
        for i in range(int(_math.floor(start)), int(_math.ceil(end))):
            matrix[o, min(i, n_in - 1)] += (min(i + 1, end) - max(i, start)) / scale
    return matrix


def _lanczos(radius):
    def kernel(x):
        with _np.errstate(divide="ignore", invalid="ignore"):
            value = radius * _np.sin(_np.pi * x) * _np.sin(_np.pi * x / radius) / (_np.pi * _np.pi * x * x)
        return _np.where(x > radius, 0.0, _np.where(x <= 1e-3, 1.0, value))

    return kernel, float(radius)


# The kernels of TF's scale_and_translate, on |distance| in input pixels, and their radii.
_SAMPLING_KERNELS = {
    "triangle": (lambda x: _np.maximum(0.0, 1.0 - x), 1.0),
    "keyscubic": (lambda x: _np.where(x < 1, (1.5 * x - 2.5) * x * x + 1,
                                      _np.where(x < 2, ((-0.5 * x + 2.5) * x - 4) * x + 2, 0.0)), 2.0),
    "mitchellcubic": (lambda x: _np.where(x < 1, (7 / 6 * x - 2) * x * x + 8 / 9,
                                          _np.where(x < 2, ((-7 / 18 * x + 2) * x - 10 / 3) * x + 16 / 9, 0.0)), 2.0),
    "lanczos3": _lanczos(3),
    "lanczos5": _lanczos(5),
    "gaussian": (lambda x: _np.where(x < 1.5, _np.exp(-x * x / (2 * 0.5 * 0.5)), 0.0), 1.5),
}


def _sampling_matrix(n_in, n_out, kernel_name, antialias):
    """scale_and_translate's weights: the kernel centred on each output's sample point, widened by the
    downscale factor when antialiasing, cut at the image's edges and normalized to sum to 1."""
    kernel, radius = _SAMPLING_KERNELS[kernel_name]
    inv_scale = _F32(1) / (_F32(n_out) / _F32(n_in))
    kernel_scale = max(float(inv_scale), 1.0) if antialias else 1.0
    span = radius * kernel_scale
    matrix = _np.zeros((n_out, n_in))
    for o in range(n_out):
        sample = float((_F32(o) + _F32(0.5)) * inv_scale)
        start = min(max(int(_math.ceil(sample - span - 0.5)), 0), n_in - 1)
        end = min(max(int(_math.floor(sample + span - 0.5)), 0), n_in - 1) + 1
        source = _np.arange(start, end)
        weights = kernel(_np.abs((source + 0.5 - sample) / kernel_scale))
        total = weights.sum()
        matrix[o, start:end] = weights / total if abs(total) >= 1000 * _np.finfo(_F32).tiny else weights
    return matrix


def _resize_batch(images, height, width, method, antialias):
    """[n, h, w, c] images at [height, width]."""
    _, h, w, _ = images._shape_tuple
    if h == 0 or w == 0:
        raise _errors.InvalidArgumentError(f"resize: cannot resize an empty image of shape {images._shape_tuple}")
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        return _take(_take(images, 1, _nearest_indices(h, height)), 2, _nearest_indices(w, width))
    if method == ResizeMethod.BILINEAR and not antialias:
        if not _dtype(images).is_floating:  # no gradient to keep: lockstep's C++ kernel, same arithmetic
            return _lockstep.io.resize_image(images, height, width, "bilinear")
        x = _ops.cast(images, _dtypes.float32._lockstep_dtype)
        return _lerp_along(_lerp_along(x, 2, width), 1, height)
    if method == ResizeMethod.BICUBIC and not antialias:
        matrices = _bicubic_matrix(h, height), _bicubic_matrix(w, width)
    elif method == ResizeMethod.AREA:
        matrices = _area_matrix(h, height), _area_matrix(w, width)
    else:
        kernel = {ResizeMethod.BILINEAR: "triangle", ResizeMethod.BICUBIC: "keyscubic"}.get(method, method)
        matrices = _sampling_matrix(h, height, kernel, antialias), _sampling_matrix(w, width, kernel, antialias)
    x = _ops.cast(images, _dtypes.float32._lockstep_dtype)
    return _along(_along(x, 2, matrices[1]), 1, matrices[0])


def _size(size):
    size = _np.asarray(size.numpy() if hasattr(size, "numpy") else size)
    if size.shape != (2,):
        raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
    if size.dtype.kind not in "iu":
        raise ValueError("'size' must be a 1-D int32 Tensor")
    return int(size[0]), int(size[1])


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False, antialias=False, name=None):
    """tf.image.resize: float32 out for every method but "nearest", which keeps the images' dtype."""
    batch, single = _batched(images, "images")
    height, width = _size(size)
    method = str(getattr(method, "value", method)).lower()
    methods = [v for k, v in vars(ResizeMethod).items() if k.isupper()]
    if method not in methods:
        raise ValueError(f"Resize method is not implemented: {method}")
    if preserve_aspect_ratio:
        h, w = _F32(batch._shape_tuple[1]), _F32(batch._shape_tuple[2])
        factor = min(_F32(height) / h, _F32(width) / w)
        height, width = int(_np.round(factor * h)), int(_np.round(factor * w))
    if height <= 0 or width <= 0:
        raise _errors.InvalidArgumentError(f"resize: output dimensions must be positive, got [{height}, {width}]")
    return _unbatched(_resize_batch(batch, height, width, method, bool(antialias)), single)


def resize_with_pad(image, target_height, target_width, method=ResizeMethod.BILINEAR, antialias=False):
    """Resizes to fit inside the target keeping the aspect ratio, then pads with zeros to centre it."""
    batch, single = _batched(image)
    target_height, target_width = _int(target_height, "target_height"), _int(target_width, "target_width")
    if target_height <= 0 or target_width <= 0:
        raise ValueError(f"target_height and target_width must be > 0, got {target_height} and {target_width}")
    h, w = _F32(batch._shape_tuple[1]), _F32(batch._shape_tuple[2])
    ratio = max(w / _F32(target_width), h / _F32(target_height))
    new_h, new_w = h / ratio, w / ratio
    resized = resize(batch, [int(_np.floor(new_h)), int(_np.floor(new_w))], method, antialias=antialias)
    top = max(0, int(_np.floor((_F32(target_height) - new_h) / _F32(2))))
    left = max(0, int(_np.floor((_F32(target_width) - new_w) / _F32(2))))
    return _unbatched(pad_to_bounding_box(resized, top, left, target_height, target_width), single)


# ---- crops and pads ----

def _pad_axis(t, axis, before, after):
    parts = []
    for n in (before, after):
        shape = list(t._shape_tuple)
        shape[axis] = n
        parts.append(_ops.fill(shape, 0, t.dtype._lockstep_dtype) if n else None)
    pieces = [p for p in (parts[0], t, parts[1]) if p is not None]
    return pieces[0] if len(pieces) == 1 else _ops.concat(pieces, axis)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The image at (offset_height, offset_width) of a zero image [target_height, target_width]."""
    batch, single = _batched(image)
    offset_height, offset_width = _int(offset_height, "offset_height"), _int(offset_width, "offset_width")
    target_height, target_width = _int(target_height, "target_height"), _int(target_width, "target_width")
    _, h, w, _ = batch._shape_tuple
    if offset_height < 0:
        raise ValueError("offset_height must be >= 0")
    if offset_width < 0:
        raise ValueError("offset_width must be >= 0")
    if target_width - offset_width - w < 0:
        raise ValueError("width must be <= target - offset")
    if target_height - offset_height - h < 0:
        raise ValueError("height must be <= target - offset")
    out = _pad_axis(batch, 1, offset_height, target_height - offset_height - h)
    return _unbatched(_pad_axis(out, 2, offset_width, target_width - offset_width - w), single)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The [target_height, target_width] window at (offset_height, offset_width)."""
    batch, single = _batched(image)
    offset_height, offset_width = _int(offset_height, "offset_height"), _int(offset_width, "offset_width")
    target_height, target_width = _int(target_height, "target_height"), _int(target_width, "target_width")
    n, h, w, c = batch._shape_tuple
    for value, what in ((offset_width, "offset_width"), (offset_height, "offset_height")):
        if value < 0:
            raise ValueError(f"{what} must be >= 0.")
    for value, what in ((target_width, "target_width"), (target_height, "target_height")):
        if value <= 0:
            raise ValueError(f"{what} must be > 0.")
    if w < target_width + offset_width:
        raise ValueError("width must be >= target + offset.")
    if h < target_height + offset_height:
        raise ValueError("height must be >= target + offset.")
    out = _ops.slice(batch, [0, offset_height, offset_width, 0], [n, target_height, target_width, c])
    return _unbatched(out, single)


def resize_with_crop_or_pad(image, target_height, target_width):
    """Centre-crops or zero-pads (per axis) to [target_height, target_width]."""
    batch, single = _batched(image)
    target_height, target_width = _int(target_height, "target_height"), _int(target_width, "target_width")
    if target_height <= 0 or target_width <= 0:
        raise ValueError(f"target_height and target_width must be > 0, got {target_height} and {target_width}")
    _, h, w, _ = batch._shape_tuple
    dh, dw = target_height - h, target_width - w
    cropped = crop_to_bounding_box(batch, max(-dh // 2, 0), max(-dw // 2, 0), min(target_height, h),
                                   min(target_width, w))
    return _unbatched(pad_to_bounding_box(cropped, max(dh // 2, 0), max(dw // 2, 0), target_height, target_width),
                      single)


def central_crop(image, central_fraction):
    """The centre `central_fraction` (0 < f <= 1) of each side."""
    batch, single = _batched(image)
    fraction = float(central_fraction)
    if fraction <= 0.0 or fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    if fraction == 1.0:
        return _tensor(image)
    _, h, w, _ = batch._shape_tuple
    top, left = int((h - h * fraction) / 2), int((w - w * fraction) / 2)
    return _unbatched(crop_to_bounding_box(batch, top, left, h - 2 * top, w - 2 * left), single)


def _crop_offsets(shape, size, draw):
    """Offsets of a random `size` window in `shape`; draw(n) gives n uniform int32 values in [0, int32 max)."""
    shape, size = _np.asarray(shape, _np.int64), _np.asarray(size, _np.int64)
    if size.shape != shape.shape:
        raise ValueError(f"random_crop: size {size.tolist()} must have one entry per dimension of the value's "
                         f"shape {shape.tolist()}")
    if (size > shape).any() or (size < 0).any():
        raise _errors.InvalidArgumentError(f"random_crop: Need value.shape >= size, got {shape.tolist()} and "
                                           f"{size.tolist()}")
    return _np.asarray(draw(len(shape)), _np.int64).reshape(-1) % (shape - size + 1)


def random_crop(value, size, seed=None, name=None):
    """A random `size` window of value (any rank)."""
    value = _tensor(value)
    size = _np.asarray(size.numpy() if hasattr(size, "numpy") else size).reshape(-1)
    offsets = _crop_offsets(value._shape_tuple, size, lambda n: _random.uniform(
        [n], 0, _np.iinfo(_np.int32).max, _dtypes.int32, seed=seed).numpy())
    return _ops.slice(value, [int(o) for o in offsets], [int(s) for s in size])


def stateless_random_crop(value, size, seed, name=None):
    value = _tensor(value)
    size = _np.asarray(size.numpy() if hasattr(size, "numpy") else size).reshape(-1)
    offsets = _crop_offsets(value._shape_tuple, size, lambda n: _random.stateless_uniform(
        [n], seed, 0, _np.iinfo(_np.int32).max, _dtypes.int32).numpy())
    return _ops.slice(value, [int(o) for o in offsets], [int(s) for s in size])


# ---- flips and rotations ----

def _flip(image, axis):
    image = _at_least_3d(image)
    if _rank(image) not in (3, 4):
        raise ValueError("'image' must have either 3 or 4 dimensions.")
    return _reverse(image, axis + _rank(image) - 3)


def flip_left_right(image):
    return _flip(image, 1)


def flip_up_down(image):
    return _flip(image, 0)


def _random_flip(image, axis, uniform):
    """Flips each image of a batch (or the one image) where its uniform draw rounds to 1, as TF does."""
    image = _at_least_3d(image)
    if _rank(image) == 3:
        return _flip(image, axis) if float(uniform([])) < 0.5 else image
    if _rank(image) != 4:
        raise ValueError("'image' must have either 3 or 4 dimensions.")
    n = image._shape_tuple[0]
    flips = _np.round(_np.asarray(uniform([n])).reshape(n, 1, 1, 1)) > 0
    return _ops.where(_tensor(_np.broadcast_to(flips, image._shape_tuple)), _flip(image, axis), image)


def _uniform(seed):
    return lambda shape: _random.uniform(shape, 0, 1.0, seed=seed).numpy()


def _stateless_uniform(seed):
    return lambda shape: _random.stateless_uniform(shape, seed, 0, 1.0).numpy()


def random_flip_left_right(image, seed=None):
    return _random_flip(image, 1, _uniform(seed))


def random_flip_up_down(image, seed=None):
    return _random_flip(image, 0, _uniform(seed))


def stateless_random_flip_left_right(image, seed):
    return _random_flip(image, 1, _stateless_uniform(seed))


def stateless_random_flip_up_down(image, seed):
    return _random_flip(image, 0, _stateless_uniform(seed))


def transpose(image, name=None):
    """Swaps height and width."""
    batch, single = _batched(image)
    return _unbatched(_ops.transpose(batch, [0, 2, 1, 3]), single)


def rot90(image, k=1, name=None):
    """Rotates by k * 90 degrees counter-clockwise."""
    batch, single = _batched(image)
    k = _int(k, "k") % 4
    if k == 1:
        batch = _ops.transpose(_reverse(batch, 2), [0, 2, 1, 3])
    elif k == 2:
        batch = _reverse(_reverse(batch, 1), 2)
    elif k == 3:
        batch = _reverse(_ops.transpose(batch, [0, 2, 1, 3]), 2)
    return _unbatched(batch, single)


# ---- colour ----

def adjust_brightness(image, delta):
    """image + delta on the [0, 1] float scale, converted back (saturating) to the image's dtype."""
    image = _tensor(image)
    flt = _to_float(image)
    return _from_float(_ops.add(flt, _ops.cast(_tensor(delta), flt.dtype._lockstep_dtype)), _dtype(image))


def adjust_contrast(images, contrast_factor):
    """(x - mean) * factor + mean, the mean per image and channel."""
    images = _at_least_3d(images)
    flt = _to_float(images)
    mean = _ops.reduce_mean(flt, [-3, -2], True)
    factor = _ops.cast(_tensor(contrast_factor), flt.dtype._lockstep_dtype)
    return _from_float(_ops.add(_ops.multiply(_ops.subtract(flt, mean), factor), mean), _dtype(images))


def adjust_gamma(image, gamma=1, gain=1):
    """gain * image ** gamma on the [0, 1] float scale."""
    image = _tensor(image)
    if float(_np.asarray(gamma)) < 0:
        raise ValueError("Gamma should be a non-negative real number.")
    flt = _to_float(image)
    dtype = flt.dtype._lockstep_dtype
    adjusted = _ops.multiply(_ops.cast(_tensor(gain), dtype), _ops.pow(flt, _ops.cast(_tensor(gamma), dtype)))
    return _from_float(adjusted, _dtype(image))


def _channels(images, what, n=3):
    if images._shape_tuple[-1] != n:
        raise _errors.InvalidArgumentError(f"{what}: input must have {n} channels but instead has "
                                           f"{images._shape_tuple[-1]} channels (shape {images._shape_tuple})")


def rgb_to_grayscale(images, name=None):
    """Rec. 601 luma (0.2989 R + 0.5870 G + 0.1140 B) in a last dimension of 1."""
    images = _tensor(images)
    if _rank(images) < 1:
        raise ValueError("rgb_to_grayscale: images must have a channels dimension")
    _channels(images, "rgb_to_grayscale")
    flt = convert_image_dtype(images, _dtypes.float32)
    weights = _tensor(_np.array([[0.2989], [0.5870], [0.1140]], _F32))
    gray = _ops.matmul(_ops.reshape(flt, [-1, 3]), weights, False, False)
    gray = _ops.reshape(gray, list(images._shape_tuple[:-1]) + [1])
    return convert_image_dtype(gray, _dtype(images))


def grayscale_to_rgb(images, name=None):
    images = _tensor(images)
    if _rank(images) < 2:
        raise ValueError(f"A grayscale image (shape {tuple(images._shape_tuple)}) must be at least two-dimensional.")
    if images._shape_tuple[-1] != 1:
        raise ValueError("Last dimension of a grayscale image should be size 1.")
    return _ops.concat([images] * 3, -1)


def _float_only(images, what):
    images = _tensor(images)
    if not _dtype(images).is_floating:
        raise _errors.InvalidArgumentError(f"{what}: images must be float32 or float64, got {_dtype(images).name}; "
                                           "use tf.image.convert_image_dtype first")
    _channels(images, what)
    return images


def _split_channels(images):
    shape = list(images._shape_tuple)
    size = shape[:-1] + [1]
    return [_ops.slice(images, [0] * (len(shape) - 1) + [i], size) for i in range(3)]


def rgb_to_hsv(images, name=None):
    """Hue, saturation and value in [0, 1], differentiable as TF's (ops, with divisions guarded where 0)."""
    images = _float_only(images, "rgb_to_hsv")
    r, g, b = _split_channels(images)
    value = _ops.maximum(_ops.maximum(r, g), b)
    span = _ops.subtract(value, _ops.minimum(_ops.minimum(r, g), b))
    zero = _ops.multiply(span, 0.0)
    positive_value, positive_span = _ops.greater(value, zero), _ops.greater(span, zero)
    saturation = _ops.where(positive_value, _ops.divide(span, _ops.where(positive_value, value, _ops.add(zero, 1.0))),
                            zero)
    norm = _ops.divide(1.0, _ops.multiply(_ops.where(positive_span, span, _ops.add(zero, 1.0)), 6.0))
    hue = _ops.where(_ops.equal(r, value), _ops.multiply(norm, _ops.subtract(g, b)),
                     _ops.where(_ops.equal(g, value), _ops.add(_ops.multiply(norm, _ops.subtract(b, r)), 2.0 / 6.0),
                                _ops.add(_ops.multiply(norm, _ops.subtract(r, g)), 4.0 / 6.0)))
    hue = _ops.where(positive_span, hue, zero)
    hue = _ops.where(_ops.less(hue, zero), _ops.add(hue, 1.0), hue)
    return _ops.concat([hue, saturation, value], -1)


def _hsv_to_rgb_array(hsv):
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    c = s * v
    m = v - c
    dh = h * hsv.dtype.type(6)
    category = _np.floor(dh).astype(_np.int64)
    x = c * (1 - _np.abs(_np.mod(dh, hsv.dtype.type(2)) - 1))
    zero = _np.zeros_like(c)
    table = [(c, x, zero), (x, c, zero), (zero, c, x), (zero, x, c), (x, zero, c), (c, zero, x)]
    out = _np.zeros(hsv.shape, hsv.dtype)
    for k, channels in enumerate(table):
        chosen = category == k
        for i in range(3):
            out[..., i] = _np.where(chosen, channels[i], out[..., i])
    return out + m[..., None]


def hsv_to_rgb(images, name=None):
    images = _float_only(images, "hsv_to_rgb")
    return _tensor(_hsv_to_rgb_array(images.numpy()))


def _rgb_to_hsv_array(rgb):
    return rgb_to_hsv(_tensor(rgb)).numpy()


def _check_last_3(image, what):
    image = _at_least_3d(image)
    _channels(image, what)
    return image


def adjust_saturation(image, saturation_factor, name=None):
    """Scales saturation (clipped to [0, 1]) in HSV space; no gradient, as in TF."""
    image = _check_last_3(image, "adjust_saturation")
    hsv = _rgb_to_hsv_array(_to_float(image).numpy())
    hsv[..., 1] = _np.clip(hsv[..., 1] * _F32(float(_np.asarray(saturation_factor))), 0, 1)
    return _from_float(_tensor(_hsv_to_rgb_array(hsv)), _dtype(image))


def adjust_hue(image, delta, name=None):
    """Rotates hue by delta (in [-1, 1], a fraction of the colour wheel); no gradient, as in TF."""
    delta = float(_np.asarray(delta))
    if not -1 <= delta <= 1:
        raise ValueError("delta must be in the interval [-1, 1]")
    image = _check_last_3(image, "adjust_hue")
    hsv = _rgb_to_hsv_array(_to_float(image).numpy())
    hue = _np.mod(hsv[..., 0] + _F32(delta), _F32(1))
    hsv[..., 0] = _np.where(hue < 0, hue + 1, hue)
    return _from_float(_tensor(_hsv_to_rgb_array(hsv)), _dtype(image))


def _check_range(lower, upper):
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")


def _factor(draw):
    return _np.asarray(draw).reshape(())


def random_brightness(image, max_delta, seed=None):
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _factor(_random.uniform([], -max_delta, max_delta, seed=seed).numpy()))


def random_contrast(image, lower, upper, seed=None):
    _check_range(lower, upper)
    return adjust_contrast(image, _factor(_random.uniform([], lower, upper, seed=seed).numpy()))


def random_saturation(image, lower, upper, seed=None):
    _check_range(lower, upper)
    return adjust_saturation(image, _factor(_random.uniform([], lower, upper, seed=seed).numpy()))


def _check_hue_delta(max_delta):
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")


def random_hue(image, max_delta, seed=None):
    _check_hue_delta(max_delta)
    return adjust_hue(image, _factor(_random.uniform([], -max_delta, max_delta, seed=seed).numpy()))


def stateless_random_brightness(image, max_delta, seed):
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_brightness(image, _factor(_random.stateless_uniform([], seed, -max_delta, max_delta).numpy()))


def stateless_random_contrast(image, lower, upper, seed):
    _check_range(lower, upper)
    return adjust_contrast(image, _factor(_random.stateless_uniform([], seed, lower, upper).numpy()))


def stateless_random_saturation(image, lower, upper, seed):
    _check_range(lower, upper)
    return adjust_saturation(image, _factor(_random.stateless_uniform([], seed, lower, upper).numpy()))


def stateless_random_hue(image, max_delta, seed):
    _check_hue_delta(max_delta)
    return adjust_hue(image, _factor(_random.stateless_uniform([], seed, -max_delta, max_delta).numpy()))


# ---- statistics and filters ----

def per_image_standardization(image):
    """(x - mean) / max(stddev, 1 / sqrt(pixels)), per image, in float32."""
    image = _at_least_3d(image)
    x = image if _dtype(image) == _dtypes.float32 else _ops.cast(image, _dtypes.float32._lockstep_dtype)
    pixels = int(_np.prod(image._shape_tuple[-3:]))
    mean = _ops.reduce_mean(x, [-1, -2, -3], True)
    centred = _ops.subtract(x, mean)
    stddev = _ops.sqrt(_ops.reduce_mean(_ops.square(centred), [-1, -2, -3], True))
    return _ops.divide(centred, _ops.maximum(stddev, 1.0 / _math.sqrt(pixels)))


def total_variation(images, name=None):
    """Sum of absolute differences between neighbouring pixels: a scalar for one image, [n] for a batch."""
    images = _tensor(images)
    rank = _rank(images)
    if rank not in (3, 4):
        raise ValueError("'images' must be either 3 or 4-dimensional.")
    shape = list(images._shape_tuple)
    total = None
    for axis in (rank - 3, rank - 2):
        size = list(shape)
        size[axis] -= 1
        begin = [0] * rank
        later = list(begin)
        later[axis] = 1
        diff = _ops.abs(_ops.subtract(_ops.slice(images, later, size), _ops.slice(images, begin, size)))
        part = _ops.reduce_sum(diff, list(range(rank - 3, rank)), False)
        total = part if total is None else _ops.add(total, part)
    return total


def sobel_edges(image):
    """[n, h, w, c, 2]: the vertical (dy) then horizontal (dx) Sobel responses, edges reflected."""
    image = _tensor(image)
    if _rank(image) != 4:
        raise ValueError(f"sobel_edges: image must be [batch, height, width, channels], got shape "
                         f"{tuple(image._shape_tuple)}")
    if not _dtype(image).is_floating:
        raise TypeError(f"sobel_edges: image must be float32 or float64, got {_dtype(image).name}; cast it first")
    n, h, w, c = image._shape_tuple
    if h < 2 or w < 2:
        raise _errors.InvalidArgumentError(f"sobel_edges: reflecting needs height and width >= 2, got {h}x{w}")
    padded = _take(_take(image, 1, [1] + list(range(h)) + [h - 2]), 2, [1] + list(range(w)) + [w - 2])
    kernels = (((-1, -2, -1), (0, 0, 0), (1, 2, 1)), ((-1, 0, 1), (-2, 0, 2), (-1, 0, 1)))
    out = []
    for kernel in kernels:
        acc = None
        for i in range(3):
            for j in range(3):
                if kernel[i][j]:
                    term = _ops.multiply(_ops.slice(padded, [0, i, j, 0], [n, h, w, c]), float(kernel[i][j]))
                    acc = term if acc is None else _ops.add(acc, term)
        out.append(acc)
    return _ops.stack(out, 4)


def extract_patches(images, sizes, strides, rates, padding, name=None):
    """[n, out_h, out_w, kh * kw * c]: each patch's pixels row by row, channels innermost."""
    images = _tensor(images)
    if _rank(images) != 4:
        raise ValueError(f"extract_patches: images must be [batch, height, width, channels], got shape "
                         f"{tuple(images._shape_tuple)}")
    params = []
    for value, what in ((sizes, "sizes"), (strides, "strides"), (rates, "rates")):
        value = [int(v) for v in value]
        if len(value) != 4 or value[0] != 1 or value[3] != 1 or min(value) < 1:
            raise ValueError(f"extract_patches: {what} must be [1, rows, cols, 1] with positive entries, got {value}")
        params.append(value[1:3])
    padding = str(padding).upper()
    if padding not in ("VALID", "SAME"):
        raise ValueError(f"extract_patches: padding must be 'VALID' or 'SAME', got {padding!r}")
    x = images
    windows = []
    for axis, (k, s, r) in enumerate(zip(*params), start=1):
        n_in, span = x._shape_tuple[axis], (k - 1) * r + 1
        if padding == "VALID":
            n_out = max(0, -(-(n_in - span + 1) // s))
        else:
            n_out = -(-n_in // s)
            total = max((n_out - 1) * s + span - n_in, 0)
            x = _pad_axis(x, axis, total // 2, total - total // 2)
        windows.append((n_out, k, s, r))
    (oh, kh, sh, rh), (ow, kw, sw, rw) = windows
    patches = []
    for i in range(kh):
        rows = _take(x, 1, _np.arange(oh) * sh + i * rh)
        for j in range(kw):
            patches.append(_take(rows, 2, _np.arange(ow) * sw + j * rw))
    return _ops.concat(patches, 3)


_unimplemented.install(globals(), "tf.image")
