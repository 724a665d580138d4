"""tf.keras.utils: seeding and the array helpers TF programs call."""
import os
import random as _random

import numpy as _np

from .. import _lockstep, _unimplemented, dtypes as _dtypes, random as _tf_random
from ._get_file import get_file  # noqa: F401
from ._utils_data import (array_to_img, img_to_array, load_img, save_img, text_dataset_from_directory,  # noqa: F401
                          timeseries_dataset_from_array)
from .backend import clear_session  # noqa: F401


def set_random_seed(seed):
    """Seeds Python's and NumPy's generators, tf.random and every lockstep initializer and Dropout made afterwards,
    as Keras' set_random_seed seeds Python, NumPy and TensorFlow."""
    if not isinstance(seed, int):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed} (of type {type(seed)})")
    _random.seed(seed)
    _np.random.seed(seed)
    _tf_random.set_seed(seed)
    _lockstep.keras.set_random_seed(seed)


def to_categorical(x, num_classes=None):
    """One-hot float32 rows for integer class labels, as Keras' to_categorical."""
    x = _np.asarray(x, dtype="int64")
    shape = x.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    x = x.reshape(-1)
    num_classes = int(num_classes or x.max() + 1)
    out = _np.zeros((x.shape[0], num_classes), dtype="float32")
    out[_np.arange(x.shape[0]), x] = 1
    return out.reshape(shape + (num_classes,))


def image_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, color_mode="rgb",
                                 batch_size=32, image_size=(256, 256), shuffle=True, seed=None, validation_split=None,
                                 subset=None, interpolation="bilinear", follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, verbose=True):
    """A tf.data.Dataset of (images, labels) batches from a folder of class subfolders, read lazily by lockstep's
    C++ reader with Keras' file order, labels, split and printed lines; it has class_names and file_paths."""
    if not isinstance(labels, str) and labels is not None:
        raise NotImplementedError("image_dataset_from_directory(labels=<a list>) is not implemented by lockstep: use "
                                  "labels='inferred' (one class per subfolder) or None")
    if pad_to_aspect_ratio or data_format not in (None, "channels_last"):
        raise NotImplementedError("image_dataset_from_directory's pad_to_aspect_ratio and channels_first are not "
                                  "implemented by lockstep")
    from .. import data

    if isinstance(data, _unimplemented.Missing):
        raise NotImplementedError("image_dataset_from_directory needs tf.data, which this build of lockstep lacks")
    from ..data._dataset import Dataset
    from ..data._structure import Structure, TensorSpec

    results = _lockstep.keras.image_dataset_from_directory(
        os.fspath(directory), labels, label_mode if labels is not None else None, list(class_names or []),
        color_mode, None if batch_size is None else int(batch_size), [int(d) for d in image_size], bool(shuffle),
        None if seed is None else int(seed), float(validation_split or 0), subset, interpolation, bool(follow_links),
        bool(crop_to_aspect_ratio), bool(verbose))
    channels = {"rgb": 3, "grayscale": 1, "rgba": 4}[color_mode]
    batch = [] if batch_size is None else [None]
    out = []
    for cpp, names, paths in results:
        image = TensorSpec(batch + [int(image_size[0]), int(image_size[1]), channels],
                           _dtypes.uint8 if interpolation == "nearest" else _dtypes.float32)
        if labels is None or label_mode is None:
            tree = image
        else:
            label = {"int": TensorSpec(batch, _dtypes.int32),
                     "categorical": TensorSpec(batch + [len(names)], _dtypes.float32),
                     "binary": TensorSpec(batch + [1], _dtypes.float32)}[label_mode]
            tree = (image, label)
        dataset = Dataset(cpp, Structure(tree))
        dataset.class_names = names if names else None
        dataset.file_paths = paths
        out.append(dataset)
    return out if subset == "both" else out[0]


def normalize(x, axis=-1, order=2):
    x = _np.asarray(x)
    norm = _np.atleast_1d(_np.linalg.norm(x, order, axis))
    norm[norm == 0] = 1
    return x / _np.expand_dims(norm, axis)


_unimplemented.install(globals(), "tf.keras.utils")
