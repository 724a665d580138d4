"""tf.keras.utils load_img / img_to_array / array_to_img / save_img, timeseries_dataset_from_array and
text_dataset_from_directory against TF 2.21's Keras."""
import numpy as np
import pytest
from conftest import tensorflow_or_skip


def _write_png(tf, path, pixels):
    with open(path, "wb") as f:
        f.write(bytes(tf.io.encode_png(pixels)))


def _pixels(h=7, w=10, c=3):
    return (np.arange(h * w * c).reshape(h, w, c) * 7 % 256).astype("uint8")


@pytest.mark.parametrize("kwargs", [{}, {"color_mode": "grayscale"}, {"color_mode": "rgba"},
                                    {"target_size": (4, 5)}, {"target_size": (5, 3), "interpolation": "bilinear"},
                                    {"target_size": (4, 4), "keep_aspect_ratio": True}])
def test_load_img_matches_keras(tf, tmp_path, kwargs):
    real = tensorflow_or_skip()
    path = str(tmp_path / "a.png")
    _write_png(tf, path, _pixels())
    ours = tf.keras.utils.img_to_array(tf.keras.utils.load_img(path, **kwargs))
    theirs = real.keras.utils.img_to_array(real.keras.utils.load_img(path, **kwargs))
    assert ours.dtype == theirs.dtype == np.float32
    np.testing.assert_array_equal(ours, theirs)


def test_array_to_img_and_save_img_round_trip(tf, tmp_path):
    real = tensorflow_or_skip()
    x = np.random.RandomState(0).uniform(-1, 3, (6, 5, 3)).astype("float32")
    np.testing.assert_array_equal(np.asarray(tf.keras.utils.array_to_img(x)),
                                  np.asarray(real.keras.utils.array_to_img(x)))
    chw = np.transpose(x, (2, 0, 1))
    np.testing.assert_array_equal(tf.keras.utils.img_to_array(tf.keras.utils.array_to_img(chw, "channels_first"),
                                                              "channels_first"),
                                  real.keras.utils.img_to_array(real.keras.utils.array_to_img(chw, "channels_first"),
                                                                "channels_first"))
    tf.keras.utils.save_img(str(tmp_path / "x.png"), x)
    np.testing.assert_array_equal(tf.keras.utils.img_to_array(tf.keras.utils.load_img(str(tmp_path / "x.png"))),
                                  real.keras.utils.img_to_array(real.keras.utils.array_to_img(x)))


def test_image_bad_input(tf, tmp_path):
    with pytest.raises(ValueError):
        tf.keras.utils.array_to_img(np.zeros((2, 2)))
    with pytest.raises(ValueError):
        tf.keras.utils.array_to_img(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError):
        tf.keras.utils.img_to_array(np.zeros((2, 2, 2, 2)))
    path = str(tmp_path / "a.png")
    _write_png(tf, path, _pixels())
    with pytest.raises(ValueError):
        tf.keras.utils.load_img(path, color_mode="cmyk")
    with pytest.raises(ValueError):
        tf.keras.utils.load_img(path, target_size=(3, 3), interpolation="sinc")
    with pytest.raises(FileNotFoundError):
        tf.keras.utils.load_img(str(tmp_path / "missing.png"))


def _batches(ds):
    out = []
    for element in ds:
        parts = element if isinstance(element, tuple) else (element,)
        out.append(tuple(np.asarray(p.numpy()) for p in parts))
    return out


@pytest.mark.parametrize("kwargs", [
    {"sequence_length": 5, "batch_size": 4},
    {"sequence_length": 3, "sequence_stride": 2, "sampling_rate": 3, "batch_size": 5},
    {"sequence_length": 4, "start_index": 3, "end_index": 30, "batch_size": 128},
    {"sequence_length": 2, "sampling_rate": 2, "batch_size": None},
])
def test_timeseries_matches_keras(tf, kwargs):
    real = tensorflow_or_skip()
    data = np.arange(40 * 2, dtype="float32").reshape(40, 2)
    targets = np.arange(100, 140)
    ours = _batches(tf.keras.utils.timeseries_dataset_from_array(data, targets, **kwargs))
    theirs = _batches(real.keras.utils.timeseries_dataset_from_array(data, targets, **kwargs))
    assert len(ours) == len(theirs)
    for (xo, yo), (xt, yt) in zip(ours, theirs):
        assert xo.dtype == xt.dtype and yo.dtype == yt.dtype
        np.testing.assert_array_equal(xo, xt)
        np.testing.assert_array_equal(yo, yt)


def test_timeseries_without_targets_and_shuffled(tf):
    real = tensorflow_or_skip()
    data = np.arange(30, dtype="float64")
    ours = _batches(tf.keras.utils.timeseries_dataset_from_array(data, None, 6, batch_size=4))
    theirs = _batches(real.keras.utils.timeseries_dataset_from_array(data, None, 6, batch_size=4))
    for (xo,), (xt,) in zip(ours, theirs):
        np.testing.assert_array_equal(xo, xt)
    # Shuffled: the same windows, each still with its target (lockstep's buffered shuffle order differs from TF's).
    targets = np.arange(30) * 10
    ds = tf.keras.utils.timeseries_dataset_from_array(data, targets, 6, batch_size=4, shuffle=True, seed=3)
    x, y = map(np.concatenate, zip(*_batches(ds)))
    np.testing.assert_array_equal(x[:, 0] * 10, y)
    assert sorted(x[:, 0]) == list(range(25))


def test_timeseries_bad_input(tf):
    real = tensorflow_or_skip()
    data = np.zeros((10, 1))
    # A window longer than the data: Keras yields no batch rather than raising.
    assert _batches(tf.keras.utils.timeseries_dataset_from_array(data, None, 20)) == []
    assert _batches(real.keras.utils.timeseries_dataset_from_array(data, None, 20)) == []
    for kwargs in ({"sampling_rate": 0}, {"sequence_stride": 10}, {"start_index": 11}, {"end_index": 10},
                   {"start_index": 5, "end_index": 4}):
        with pytest.raises(ValueError):
            real.keras.utils.timeseries_dataset_from_array(data, None, 2, **kwargs)
        with pytest.raises(ValueError):
            tf.keras.utils.timeseries_dataset_from_array(data, None, 2, **kwargs)


@pytest.fixture
def text_dir(tmp_path):
    root = tmp_path / "texts"
    for c, n in (("neg", 7), ("pos", 6), ("zzz", 3)):
        (root / c).mkdir(parents=True)
        for i in range(n):
            (root / c / f"{i:02d}.txt").write_text(f"{c} review number {i} " + "x" * i)
    (root / "pos" / "nested").mkdir()
    (root / "pos" / "nested" / "deep.txt").write_text("deep")
    (root / "pos" / "skip.md").write_text("not a txt")
    return str(root)


def _texts(ds):
    xs, ys = [], []
    for x, y in ds:
        xs += list(x.numpy())
        ys += list(np.asarray(y.numpy()))
    return xs, ys


@pytest.mark.parametrize("kwargs", [
    {"shuffle": False},
    {"shuffle": False, "label_mode": "categorical", "max_length": 8, "batch_size": 5},
    {"shuffle": False, "class_names": ["pos", "neg"], "label_mode": "binary"},
])
def test_text_dataset_matches_keras(tf, text_dir, kwargs):
    real = tensorflow_or_skip()
    ours = tf.keras.utils.text_dataset_from_directory(text_dir, verbose=False, **kwargs)
    theirs = real.keras.utils.text_dataset_from_directory(text_dir, verbose=False, **kwargs)
    assert ours.class_names == theirs.class_names
    (xo, yo), (xt, yt) = _texts(ours), _texts(theirs)
    assert xo == xt
    np.testing.assert_array_equal(np.array(yo), np.array(yt))


def test_text_dataset_split_matches_keras(tf, text_dir, capfd):
    real = tensorflow_or_skip()
    args = dict(validation_split=0.3, seed=11, batch_size=4)
    train, val = tf.keras.utils.text_dataset_from_directory(text_dir, subset="both", **args)
    ours_out = capfd.readouterr().out
    r_train, r_val = real.keras.utils.text_dataset_from_directory(text_dir, subset="both", **args)
    assert ours_out == capfd.readouterr().out  # "Found 17 files belonging to 3 classes." and the split lines
    # The validation subset is not shuffled: same batches; training: same files (buffered shuffle order differs).
    assert _texts(val)[0] == _texts(r_val)[0]
    xo, yo = _texts(train)
    xt, yt = _texts(r_train)
    assert sorted(zip(xo, yo)) == sorted(zip(xt, yt))
    only = tf.keras.utils.text_dataset_from_directory(text_dir, subset="validation", verbose=False, **args)
    assert _texts(only) == _texts(val)


def test_text_dataset_bad_input(tf, text_dir, tmp_path):
    with pytest.raises(FileNotFoundError):
        tf.keras.utils.text_dataset_from_directory(str(tmp_path / "missing"))
    with pytest.raises(ValueError):
        tf.keras.utils.text_dataset_from_directory(text_dir, validation_split=0.2, subset="testing", seed=1)
    with pytest.raises(ValueError):
        tf.keras.utils.text_dataset_from_directory(text_dir, validation_split=0.2, seed=1)
    with pytest.raises(ValueError):
        tf.keras.utils.text_dataset_from_directory(text_dir, validation_split=0.2, subset="training")
    with pytest.raises(ValueError):
        tf.keras.utils.text_dataset_from_directory(text_dir, label_mode="binary", verbose=False)
    with pytest.raises(ValueError):
        tf.keras.utils.text_dataset_from_directory(text_dir, class_names=["pos", "nope"], verbose=False)
    empty = tmp_path / "empty" / "a"
    empty.mkdir(parents=True)
    with pytest.raises(ValueError):
        tf.keras.utils.text_dataset_from_directory(str(tmp_path / "empty"), verbose=False)


def test_images_without_pil_match_keras(tf, tmp_path, monkeypatch):
    """Without Pillow lockstep decodes with tf.io and returns its own image object; nearest resizing, the colour
    modes, array_to_img and PNG saving still agree with Keras (which uses PIL)."""
    real = tensorflow_or_skip()
    import lockstep.keras._utils_data as utils_data

    monkeypatch.setattr(utils_data, "_PIL", None)
    path = str(tmp_path / "a.png")
    _write_png(tf, path, _pixels(9, 13, 4))
    for kwargs in ({}, {"color_mode": "grayscale"}, {"color_mode": "rgba"}, {"target_size": (4, 6)},
                   {"target_size": (5, 5), "keep_aspect_ratio": True}):
        img = tf.keras.utils.load_img(path, **kwargs)
        theirs = real.keras.utils.load_img(path, **kwargs)
        assert (img.size, img.mode) == (theirs.size, theirs.mode)
        np.testing.assert_array_equal(tf.keras.utils.img_to_array(img), real.keras.utils.img_to_array(theirs))
    with pytest.raises(NotImplementedError):
        tf.keras.utils.load_img(path, target_size=(4, 6), interpolation="bilinear")
    x = np.random.RandomState(1).uniform(0, 1, (5, 4, 3))
    tf.keras.utils.save_img(str(tmp_path / "x.png"), x)
    np.testing.assert_array_equal(tf.keras.utils.img_to_array(tf.keras.utils.load_img(str(tmp_path / "x.png"))),
                                  real.keras.utils.img_to_array(real.keras.utils.array_to_img(x)))
    with pytest.raises(NotImplementedError):
        tf.keras.utils.save_img(str(tmp_path / "x.jpg"), x)


def test_timeseries_element_spec_matches_keras(tf):
    real = tensorflow_or_skip()
    data, targets = np.zeros((50, 3), "float32"), np.arange(50)
    for batch_size in (8, None):
        ours = tf.keras.utils.timeseries_dataset_from_array(data, targets, 10, batch_size=batch_size).element_spec
        theirs = real.keras.utils.timeseries_dataset_from_array(data, targets, 10, batch_size=batch_size).element_spec
        assert [(tuple(s.shape), s.dtype.name) for s in ours] == [(tuple(s.shape), s.dtype.name) for s in theirs]
