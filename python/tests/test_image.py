"""tf.image, tf.io's image decoders and tf.audio against TensorFlow 2.21: values per function on single and batched
images of a few dtypes, gradients where TF has them, decoding bytes TF encoded, and bad input."""
import io
import wave

import numpy as np
import pytest
from conftest import tensorflow_or_skip

RNG = np.random.default_rng(36)
FLOAT = RNG.random((2, 6, 7, 3)).astype(np.float32)
UINT8 = (RNG.random((2, 5, 8, 3)) * 255).astype(np.uint8)
METHODS = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic"]


def close(ours, theirs, tol=1e-5):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours.astype(np.float64), theirs.astype(np.float64), rtol=tol, atol=tol)


# ---- resize ----

@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [False, True])
def test_resize_methods_match_tensorflow(tf, method, antialias):
    real = tensorflow_or_skip()
    for size in ([3, 4], [11, 13], [6, 20]):
        close(tf.image.resize(FLOAT, size, method, antialias=antialias),
              real.image.resize(FLOAT, size, method, antialias=antialias))
    close(tf.image.resize(UINT8[0], [9, 3], method), real.image.resize(UINT8[0], [9, 3], method), 1e-3)


def test_resize_preserve_aspect_ratio_and_method_names(tf):
    real = tensorflow_or_skip()
    for size in ([12, 4], [5, 30], [3, 3]):
        close(tf.image.resize(FLOAT, size, preserve_aspect_ratio=True),
              real.image.resize(FLOAT, size, preserve_aspect_ratio=True))
    ours = tf.image.resize(UINT8, [4, 4], method=tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    close(ours, real.image.resize(UINT8, [4, 4], method=real.image.ResizeMethod.NEAREST_NEIGHBOR))
    assert ours.dtype == tf.uint8
    assert tf.image.ResizeMethod.BICUBIC == real.image.ResizeMethod.BICUBIC


@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic", "lanczos3", "mitchellcubic"])
def test_resize_gradient_matches_tensorflow(tf, method):
    real = tensorflow_or_skip()
    weights = RNG.random((2, 4, 9, 3)).astype(np.float32)
    x = tf.Variable(FLOAT)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.image.resize(x, [4, 9], method) * weights)
    rx = real.Variable(FLOAT)
    with real.GradientTape() as rtape:
        rloss = real.reduce_sum(real.image.resize(rx, [4, 9], method) * weights)
    close(tape.gradient(loss, x), rtape.gradient(rloss, rx), 1e-4)


def test_resize_bad_input(tf):
    with pytest.raises(ValueError, match="3 or 4 dimensions"):
        tf.image.resize(FLOAT[0, 0], [3, 4])
    with pytest.raises(ValueError, match="2 elements"):
        tf.image.resize(FLOAT, [3])
    with pytest.raises(ValueError, match="int32"):
        tf.image.resize(FLOAT, [3.5, 4.0])
    with pytest.raises(ValueError, match="not implemented: cubic"):
        tf.image.resize(FLOAT, [3, 4], "cubic")
    with pytest.raises(tf.errors.InvalidArgumentError, match="positive"):
        tf.image.resize(FLOAT, [0, 4])


def test_resize_with_pad(tf):
    real = tensorflow_or_skip()
    for target, method in (([10, 10], "bilinear"), ([4, 12], "nearest"), ([7, 3], "bicubic")):
        close(tf.image.resize_with_pad(FLOAT, *target, method=method),
              real.image.resize_with_pad(FLOAT, *target, method=method))
        close(tf.image.resize_with_pad(UINT8[1], *target, method=method),
              real.image.resize_with_pad(UINT8[1], *target, method=method), 1e-3)
    with pytest.raises(ValueError):
        tf.image.resize_with_pad(FLOAT, 0, 5)


# ---- dtype conversion ----

@pytest.mark.parametrize("src,dst", [("uint8", "float32"), ("uint8", "float64"), ("float32", "uint8"),
                                     ("float64", "uint8"), ("uint8", "int32"), ("int32", "uint8"),
                                     ("int32", "float32"), ("float32", "int32"), ("float32", "float64"),
                                     ("int64", "int32"), ("uint8", "uint8")])
def test_convert_image_dtype_matches_tensorflow(tf, src, dst):
    real = tensorflow_or_skip()
    if src == "uint8":
        values = UINT8
    elif src.startswith("int"):
        values = (RNG.random((3, 4, 2)) * np.iinfo(src).max).astype(src)
    else:
        values = RNG.random((3, 4, 2)).astype(src)
    for saturate in (False, True):
        close(tf.image.convert_image_dtype(values, dst, saturate=saturate),
              real.image.convert_image_dtype(values, dst, saturate=saturate))
    out_of_range = np.array([[[-0.5, 0.2, 1.7]]], np.float32)
    close(tf.image.convert_image_dtype(out_of_range, tf.uint8, saturate=True),
          real.image.convert_image_dtype(out_of_range, real.uint8, saturate=True))


def test_convert_image_dtype_bad_input_and_gradient(tf):
    with pytest.raises(AttributeError, match="image dtype"):
        tf.image.convert_image_dtype(tf.constant([True]), tf.float32)
    with pytest.raises(AttributeError, match="dtype must be"):
        tf.image.convert_image_dtype(FLOAT, tf.bool)
    x = tf.Variable(np.ones([2, 2, 1]), dtype=tf.float64)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.image.convert_image_dtype(x, tf.float32) * 3.0)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.full([2, 2, 1], 3.0))


# ---- crops, pads, flips ----

def test_crops_and_pads_match_tensorflow(tf):
    real = tensorflow_or_skip()
    for image in (FLOAT, FLOAT[0], UINT8, UINT8[1]):
        close(tf.image.crop_to_bounding_box(image, 1, 2, 3, 4), real.image.crop_to_bounding_box(image, 1, 2, 3, 4))
        close(tf.image.pad_to_bounding_box(image, 2, 1, 10, 12), real.image.pad_to_bounding_box(image, 2, 1, 10, 12))
        for target in ((3, 3), (9, 11), (4, 12), (11, 2)):
            close(tf.image.resize_with_crop_or_pad(image, *target), real.image.resize_with_crop_or_pad(image, *target))
        for fraction in (0.5, 0.33, 0.9, 1.0):
            close(tf.image.central_crop(image, fraction), real.image.central_crop(image, fraction))


def test_crop_and_pad_bad_input(tf):
    with pytest.raises(ValueError, match="width must be <= target - offset"):
        tf.image.pad_to_bounding_box(FLOAT, 0, 1, 6, 7)
    with pytest.raises(ValueError, match="offset_height must be >= 0"):
        tf.image.pad_to_bounding_box(FLOAT, -1, 0, 9, 9)
    with pytest.raises(ValueError, match="width must be >= target \\+ offset"):
        tf.image.crop_to_bounding_box(FLOAT, 0, 1, 2, 7)
    with pytest.raises(ValueError, match="target_height must be > 0"):
        tf.image.crop_to_bounding_box(FLOAT, 0, 0, 0, 2)
    with pytest.raises(ValueError, match="central_fraction"):
        tf.image.central_crop(FLOAT, 0.0)
    with pytest.raises(ValueError, match="3 or 4 dimensions"):
        tf.image.crop_to_bounding_box(FLOAT[0, 0], 0, 0, 1, 1)


def test_flips_and_rotations_match_tensorflow(tf):
    real = tensorflow_or_skip()
    for image in (FLOAT, FLOAT[1], UINT8):
        for name in ("flip_left_right", "flip_up_down", "transpose"):
            close(getattr(tf.image, name)(image), getattr(real.image, name)(image))
        for k in (0, 1, 2, 3, 5, -1):
            close(tf.image.rot90(image, k), real.image.rot90(image, k))
    with pytest.raises(ValueError, match="at least three-dimensional"):
        tf.image.flip_left_right(FLOAT[0, 0])


def test_flip_and_crop_gradients(tf):
    x = tf.Variable(FLOAT[0])
    weights = RNG.random((7, 6, 3)).astype(np.float32)
    with tf.GradientTape() as tape:
        y = tf.image.rot90(tf.image.flip_left_right(x))
        loss = tf.reduce_sum(y * weights) + tf.reduce_sum(tf.image.central_crop(x, 0.5))
    want = np.rot90(weights, -1, axes=(0, 1))[:, ::-1]
    want = want.copy()
    want[1:5, 1:6] += 1  # the central crop of a 6x7 image at fraction 0.5: rows 1-4, columns 1-5
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), want, rtol=1e-6)


def test_random_flips_and_crops(tf):
    tf.random.set_seed(3)
    batch = np.stack([FLOAT[0]] * 64)
    flipped = tf.image.random_flip_left_right(batch).numpy()
    is_flipped = [np.array_equal(f, FLOAT[0][:, ::-1]) for f in flipped]
    assert all(is_flipped[i] or np.array_equal(flipped[i], FLOAT[0]) for i in range(64))
    assert 10 < sum(is_flipped) < 54
    up_down = tf.image.random_flip_up_down(FLOAT[0]).numpy()
    assert np.array_equal(up_down, FLOAT[0]) or np.array_equal(up_down, FLOAT[0][::-1])
    crop = tf.image.random_crop(FLOAT, [2, 3, 4, 3]).numpy()
    assert crop.shape == (2, 3, 4, 3)
    found = [(i, j) for i in range(4) for j in range(4) if np.array_equal(FLOAT[:, i:i + 3, j:j + 4], crop)]
    assert found
    with pytest.raises(tf.errors.InvalidArgumentError, match="value.shape >= size"):
        tf.image.random_crop(FLOAT, [2, 7, 4, 3])
    with pytest.raises(ValueError, match="one entry per dimension"):
        tf.image.random_crop(FLOAT, [3, 4])


def test_stateless_random_ops_match_tensorflow(tf):
    real = tensorflow_or_skip()
    for seed in ([1, 2], [7, 0]):
        close(tf.image.stateless_random_crop(FLOAT, [2, 3, 4, 3], seed),
              real.image.stateless_random_crop(FLOAT, [2, 3, 4, 3], seed))
        close(tf.image.stateless_random_flip_left_right(FLOAT, seed),
              real.image.stateless_random_flip_left_right(FLOAT, seed))
        close(tf.image.stateless_random_flip_up_down(FLOAT[0], seed),
              real.image.stateless_random_flip_up_down(FLOAT[0], seed))
        close(tf.image.stateless_random_brightness(UINT8, 0.3, seed),
              real.image.stateless_random_brightness(UINT8, 0.3, seed))
        close(tf.image.stateless_random_contrast(FLOAT, 0.2, 1.8, seed),
              real.image.stateless_random_contrast(FLOAT, 0.2, 1.8, seed))
        close(tf.image.stateless_random_saturation(FLOAT, 0.2, 1.8, seed),
              real.image.stateless_random_saturation(FLOAT, 0.2, 1.8, seed))
        close(tf.image.stateless_random_hue(FLOAT, 0.3, seed), real.image.stateless_random_hue(FLOAT, 0.3, seed),
              1e-4)


# ---- colour ----

def test_adjustments_match_tensorflow(tf):
    real = tensorflow_or_skip()
    for image in (FLOAT, FLOAT[0], UINT8, FLOAT.astype(np.float64)):
        for name, args in (("adjust_brightness", (0.2,)), ("adjust_brightness", (-0.7,)),
                           ("adjust_contrast", (1.7,)), ("adjust_contrast", (0.3,)),
                           ("adjust_gamma", (2.2, 1.1)), ("adjust_gamma", (0.5,)),
                           ("adjust_saturation", (0.4,)), ("adjust_saturation", (2.5,)),
                           ("adjust_hue", (0.3,)), ("adjust_hue", (-0.8,)), ("rgb_to_grayscale", ())):
            close(getattr(tf.image, name)(image, *args), getattr(real.image, name)(image, *args), 1e-4)


def test_colour_space_conversions_match_tensorflow(tf):
    real = tensorflow_or_skip()
    special = np.array([[[0, 0, 0], [1, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.5, 0.2]]], np.float32)
    for image in (FLOAT, special, FLOAT.astype(np.float64)):
        hsv = real.image.rgb_to_hsv(real.constant(image))  # (TF's op makes float32 of a float64 NumPy array)
        close(tf.image.rgb_to_hsv(image), hsv)
        close(tf.image.hsv_to_rgb(tf.constant(hsv.numpy())), real.image.hsv_to_rgb(hsv))
    gray = UINT8[..., :1]
    close(tf.image.grayscale_to_rgb(gray), real.image.grayscale_to_rgb(real.constant(gray)))
    x = tf.Variable(FLOAT)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.image.rgb_to_hsv(x) * 2.0) + tf.reduce_sum(tf.image.rgb_to_grayscale(x))
    rx = real.Variable(FLOAT)
    with real.GradientTape() as rtape:
        rloss = real.reduce_sum(real.image.rgb_to_hsv(rx) * 2.0) + real.reduce_sum(real.image.rgb_to_grayscale(rx))
    close(tape.gradient(loss, x), rtape.gradient(rloss, rx), 1e-4)


def test_colour_bad_input(tf):
    with pytest.raises(tf.errors.InvalidArgumentError, match="3 channels"):
        tf.image.adjust_saturation(np.zeros([4, 4, 4], np.float32), 2.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="3 channels"):
        tf.image.rgb_to_grayscale(np.zeros([4, 4, 4], np.float32))
    with pytest.raises(ValueError, match="size 1"):
        tf.image.grayscale_to_rgb(np.zeros([4, 4, 3], np.float32))
    with pytest.raises(ValueError, match="interval"):
        tf.image.adjust_hue(FLOAT, 2.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="float"):
        tf.image.rgb_to_hsv(UINT8)
    with pytest.raises(ValueError, match="non-negative"):
        tf.image.adjust_gamma(FLOAT, -1.0)
    with pytest.raises(ValueError, match="upper must be > lower"):
        tf.image.random_contrast(FLOAT, 0.5, 0.5)
    with pytest.raises(ValueError, match="<= 0.5"):
        tf.image.random_hue(FLOAT, 0.6)
    with pytest.raises(ValueError, match="non-negative"):
        tf.image.random_brightness(FLOAT, -0.1)


def test_random_adjustments_stay_in_range(tf):
    tf.random.set_seed(5)
    out = tf.image.random_brightness(FLOAT, 0.2).numpy()
    delta = out - FLOAT
    assert np.ptp(delta) < 1e-5 and abs(delta.mean()) <= 0.2 and abs(delta.mean()) > 0
    contrast = tf.image.random_contrast(FLOAT, 0.5, 1.5).numpy()
    assert contrast.shape == FLOAT.shape and not np.allclose(contrast, FLOAT)
    for f in (lambda x: tf.image.random_saturation(x, 0.5, 1.5), lambda x: tf.image.random_hue(x, 0.2)):
        assert f(UINT8).dtype == tf.uint8


def test_brightness_gamma_contrast_gradients(tf):
    real = tensorflow_or_skip()
    x, rx = tf.Variable(FLOAT), real.Variable(FLOAT)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.image.adjust_gamma(tf.image.adjust_brightness(x, 0.1), 2.0, 1.5) * FLOAT)
    with real.GradientTape() as rtape:
        rloss = real.reduce_sum(real.image.adjust_gamma(real.image.adjust_brightness(rx, 0.1), 2.0, 1.5) * FLOAT)
    close(tape.gradient(loss, x), rtape.gradient(rloss, rx), 1e-4)
    with tf.GradientTape() as tape:  # TF has no gradient for adjust_contrast; lockstep's is (x - mean) * f + mean's
        loss = tf.reduce_sum(tf.image.adjust_contrast(x, 2.0) * FLOAT)
    weights = FLOAT * 2.0 - FLOAT.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), weights, rtol=1e-4, atol=1e-5)


# ---- statistics and filters ----

def test_statistics_and_filters_match_tensorflow(tf):
    real = tensorflow_or_skip()
    for image in (FLOAT, FLOAT[0], UINT8):
        close(tf.image.per_image_standardization(image), real.image.per_image_standardization(image), 1e-4)
    for image in (FLOAT, FLOAT[0], UINT8.astype(np.int32)):
        close(tf.image.total_variation(image), real.image.total_variation(real.constant(image)), 1e-4)
    close(tf.image.sobel_edges(FLOAT), real.image.sobel_edges(real.constant(FLOAT)))
    constant = np.full([1, 4, 4, 1], 3.0, np.float32)
    close(tf.image.per_image_standardization(constant), real.image.per_image_standardization(constant))
    for sizes, strides, rates, padding in (([1, 3, 3, 1], [1, 1, 1, 1], [1, 1, 1, 1], "VALID"),
                                           ([1, 2, 3, 1], [1, 2, 3, 1], [1, 1, 1, 1], "SAME"),
                                           ([1, 2, 2, 1], [1, 1, 2, 1], [1, 2, 2, 1], "VALID"),
                                           ([1, 3, 2, 1], [1, 4, 1, 1], [1, 1, 2, 1], "SAME")):
        close(tf.image.extract_patches(FLOAT, sizes, strides, rates, padding),
              real.image.extract_patches(FLOAT, sizes, strides, rates, padding))


def test_statistics_bad_input(tf):
    with pytest.raises(ValueError, match="3 or 4"):
        tf.image.total_variation(FLOAT[0, 0])
    with pytest.raises(ValueError, match="batch, height, width"):
        tf.image.sobel_edges(FLOAT[0])
    with pytest.raises(ValueError, match="at least three-dimensional"):
        tf.image.per_image_standardization(FLOAT[0, 0])
    with pytest.raises(ValueError, match="padding"):
        tf.image.extract_patches(FLOAT, [1, 2, 2, 1], [1, 1, 1, 1], [1, 1, 1, 1], "FULL")
    with pytest.raises(ValueError, match="sizes"):
        tf.image.extract_patches(FLOAT, [2, 2], [1, 1, 1, 1], [1, 1, 1, 1], "VALID")


def test_standardization_and_sobel_gradients(tf):
    real = tensorflow_or_skip()
    x, rx = tf.Variable(FLOAT), real.Variable(FLOAT)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.image.per_image_standardization(x) * FLOAT) + tf.reduce_sum(
            tf.square(tf.image.sobel_edges(x))) + tf.reduce_sum(tf.image.total_variation(x))
    with real.GradientTape() as rtape:
        rloss = real.reduce_sum(real.image.per_image_standardization(rx) * FLOAT) + real.reduce_sum(
            real.square(real.image.sobel_edges(rx))) + real.reduce_sum(real.image.total_variation(rx))
    close(tape.gradient(loss, x), rtape.gradient(rloss, rx), 1e-3)


# ---- decoders ----

def test_decode_png_and_jpeg_of_tensorflow_encodings(tf):
    real = tensorflow_or_skip()
    image = UINT8[0]
    for channels_in in (1, 3, 4):
        source = np.concatenate([image, image[..., :1]], -1)[..., :channels_in] if channels_in == 4 else \
            image[..., :channels_in]
        png = real.io.encode_png(source).numpy()
        for channels in (0, 1, 3, 4):
            want = real.io.decode_png(png, channels=channels)
            close(tf.io.decode_png(png, channels=channels), want)
            close(tf.image.decode_png(tf.constant(png), channels=channels), want)
            close(tf.io.decode_image(png, channels=channels), real.io.decode_image(png, channels=channels))
    for source in (image, image[..., :1]):
        jpeg = real.io.encode_jpeg(source, quality=90).numpy()
        for channels in (0, 1, 3):
            close(tf.io.decode_jpeg(jpeg, channels=channels), real.io.decode_jpeg(jpeg, channels=channels))
            close(tf.image.decode_image(jpeg, channels=channels), real.image.decode_image(jpeg, channels=channels))
    close(tf.io.decode_jpeg(png), real.io.decode_jpeg(png))  # TF's decoders tell the format by its signature
    close(tf.io.decode_image(png, dtype=tf.float32), real.io.decode_image(png, dtype=real.float32))


def test_decode_bad_input(tf):
    png = tf.io.encode_png(UINT8[0]).numpy()
    with pytest.raises(tf.errors.InvalidArgumentError, match="PNG or JPEG"):
        tf.io.decode_image(b"garbage")
    with pytest.raises(tf.errors.InvalidArgumentError, match="corrupt or truncated PNG"):
        tf.io.decode_png(png[:40])
    with pytest.raises(tf.errors.InvalidArgumentError, match="corrupt or truncated JPEG"):
        tf.io.decode_jpeg(b"\xff\xd8\xff\xe0" + b"\0" * 30)
    with pytest.raises(tf.errors.InvalidArgumentError, match="scalar"):
        tf.io.decode_png(tf.constant([png, png]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="4 channels"):
        tf.io.decode_jpeg(png, channels=4)
    with pytest.raises(tf.errors.InvalidArgumentError, match="channels"):
        tf.io.decode_png(png, channels=2)
    with pytest.raises(TypeError, match="tf.string"):
        tf.io.decode_png(3)
    with pytest.raises(NotImplementedError, match="decode_gif"):
        tf.io.decode_gif
    with pytest.raises(NotImplementedError, match="ratio"):
        tf.io.decode_jpeg(png, ratio=2)


def test_encode_png_round_trips_through_tensorflow(tf):
    real = tensorflow_or_skip()
    for image in (UINT8[0], UINT8[1, ..., :1], np.concatenate([UINT8[0], UINT8[0, ..., :1]], -1)):
        png = tf.io.encode_png(image)
        assert png.dtype == tf.string
        np.testing.assert_array_equal(real.io.decode_png(png.numpy()).numpy(), image)
    with pytest.raises(tf.errors.InvalidArgumentError, match="channels"):
        tf.io.encode_png(np.zeros([2, 2, 5], np.uint8))
    with pytest.raises(TypeError, match="uint8"):
        tf.io.encode_png(FLOAT[0])


def test_decode_raw_matches_tensorflow(tf):
    real = tensorflow_or_skip()
    data = [np.arange(6, dtype=np.float32).tobytes(), np.arange(6, 12, dtype=np.float32).tobytes()]
    for dtype in ("float32", "int32", "uint8", "int64", "float64"):
        if 24 % np.dtype(dtype).itemsize == 0:
            close(tf.io.decode_raw(tf.constant(data), dtype), real.io.decode_raw(data, dtype))
    close(tf.io.decode_raw(tf.constant(data), tf.int32, little_endian=False),
          real.io.decode_raw(data, real.int32, little_endian=False))
    close(tf.io.decode_raw(tf.constant(data[0]), tf.uint8), real.io.decode_raw(data[0], real.uint8))
    close(tf.io.decode_raw(tf.constant([b"abc", b"defgh"]), tf.uint8, fixed_length=4),
          real.io.decode_raw([b"abc", b"defgh"], real.uint8, fixed_length=4))
    with pytest.raises(tf.errors.InvalidArgumentError, match="same size"):
        tf.io.decode_raw(tf.constant([b"abcd", b"ab"]), tf.uint8)
    with pytest.raises(tf.errors.InvalidArgumentError, match="multiple of 4"):
        tf.io.decode_raw(tf.constant([b"abcdef"]), tf.float32)


# ---- audio ----

def _wav(samples, rate=16000, width=2):
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(samples.shape[1])
        w.setsampwidth(width)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())
    return buffer.getvalue()


def test_decode_wav_matches_tensorflow(tf):
    real = tensorflow_or_skip()
    stereo = (RNG.random((50, 2)) * 65535 - 32768).astype(np.int16)
    for samples in (stereo, stereo[:, :1]):
        data = _wav(samples, 22050)
        for channels, frames in ((-1, -1), (1, -1), (3, 20), (-1, 80)):
            audio, rate = tf.audio.decode_wav(data, desired_channels=channels, desired_samples=frames)
            want, want_rate = real.audio.decode_wav(data, desired_channels=channels, desired_samples=frames)
            close(audio, want)
            close(rate, want_rate)
    encoded = real.audio.encode_wav(real.constant(stereo / 32768.0, real.float32), 8000).numpy()
    close(tf.audio.decode_wav(tf.constant(encoded))[0], real.audio.decode_wav(encoded)[0])


def test_encode_wav_matches_tensorflow(tf):
    real = tensorflow_or_skip()
    audio = np.concatenate([RNG.random((30, 2)) * 2.4 - 1.2, [[1.0, -1.0], [0.5, -0.5]]]).astype(np.float32)
    ours = tf.audio.encode_wav(audio, 44100)
    assert ours.dtype == tf.string
    assert ours.numpy() == real.audio.encode_wav(audio, 44100).numpy()


def test_wav_bad_input(tf):
    with pytest.raises(tf.errors.InvalidArgumentError, match="RIFF"):
        tf.audio.decode_wav(b"not a wav file at all, no")
    with pytest.raises(tf.errors.InvalidArgumentError, match="16-bit"):
        tf.audio.decode_wav(_wav(np.zeros([4, 1], np.uint8), width=1))
    with pytest.raises(tf.errors.InvalidArgumentError, match="ends"):
        tf.audio.decode_wav(_wav(np.zeros([40, 1], np.int16))[:30])
    with pytest.raises(tf.errors.InvalidArgumentError, match="audio"):
        tf.audio.encode_wav(np.zeros([4], np.float32), 8000)


def test_jpeg_shape_crop_and_signature(tf):
    real = tensorflow_or_skip()
    jpeg = real.io.encode_jpeg(UINT8[0]).numpy()
    close(tf.io.extract_jpeg_shape(jpeg), real.io.extract_jpeg_shape(jpeg))
    # TF decodes only the window, which changes chroma upsampling at its edges: lockstep crops the full decode.
    close(tf.io.decode_and_crop_jpeg(jpeg, [1, 2, 3, 4]), real.io.decode_jpeg(jpeg)[1:4, 2:6])
    assert bool(tf.io.is_jpeg(jpeg)) and not bool(tf.io.is_jpeg(tf.io.encode_png(UINT8[0])))
    with pytest.raises(tf.errors.InvalidArgumentError, match="crop window"):
        tf.io.decode_and_crop_jpeg(jpeg, [4, 0, 3, 3])
