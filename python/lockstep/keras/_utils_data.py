"""tf.keras.utils' image-file helpers (load_img, img_to_array, array_to_img, save_img) and the dataset builders
timeseries_dataset_from_array and text_dataset_from_directory, with Keras 3's arguments, orders and errors."""
import io as _io
import os
import pathlib

import numpy as _np

from .. import dtypes as _dtypes
from .backend import floatx, image_data_format

try:  # Keras returns PIL images; PIL is optional for lockstep, which then decodes with tf.io
    from PIL import Image as _PIL
except ImportError:
    _PIL = None

_COLOR_MODES = {"grayscale": "L", "rgb": "RGB", "rgba": "RGBA"}
_RESAMPLING = ("nearest", "bilinear", "bicubic", "hamming", "box", "lanczos")


def _data_format(data_format):
    data_format = image_data_format() if data_format is None else str(data_format).lower()
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format must be 'channels_last' or 'channels_first', got {data_format!r}")
    return data_format


class _Image:
    """The little of a PIL image that lockstep's helpers use when PIL is not installed: size (width, height),
    mode, and the pixels through __array__ ([h, w] for "L", [h, w, c] otherwise, uint8)."""

    def __init__(self, pixels, mode):
        self._pixels, self.mode = pixels, mode
        self.size = (pixels.shape[1], pixels.shape[0])
        self.width, self.height = self.size

    def __array__(self, dtype=None, copy=None):
        return self._pixels if dtype is None else self._pixels.astype(dtype)

    def save(self, path, format=None, **kwargs):
        from .. import io as tf_io

        if (format or pathlib.Path(os.fspath(path)).suffix[1:]).lower() != "png" or kwargs:
            raise NotImplementedError("save_img without PIL writes PNG only (tf.io.encode_png): install Pillow for "
                                      "other formats or options")
        pixels = self._pixels if self._pixels.ndim == 3 else self._pixels[:, :, None]
        with open(path, "wb") as f:
            f.write(bytes(tf_io.encode_png(pixels)))


def _read_bytes(path):
    if isinstance(path, _io.BytesIO):
        return path.getvalue()
    if isinstance(path, (str, bytes, pathlib.Path)):
        with open(path, "rb") as f:
            return f.read()
    raise TypeError(f"load_img: path should be path-like or io.BytesIO, not {type(path)}")


def _aspect_crop_box(size, target):
    """The centred (left, top, right, bottom) box of `size` (w, h) with target's (w, h) aspect ratio."""
    (width, height), (target_w, target_h) = size, target
    crop_h = min(height, width * target_h // target_w)
    crop_w = min(width, height * target_w // target_h)
    top, left = (height - crop_h) // 2, (width - crop_w) // 2
    return [left, top, left + crop_w, top + crop_h]


def load_img(path, color_mode="rgb", target_size=None, interpolation="nearest", keep_aspect_ratio=False):
    """An image file as a PIL image (a minimal image object when PIL is missing), converted to color_mode and
    resized to target_size (height, width) as Keras' load_img."""
    if color_mode not in _COLOR_MODES:
        raise ValueError(f'color_mode must be "grayscale", "rgb", or "rgba", got {color_mode!r}')
    contents = _read_bytes(path)
    if _PIL is not None:
        img = _PIL.open(_io.BytesIO(contents))
        if img.mode != _COLOR_MODES[color_mode] and not (color_mode == "grayscale" and img.mode in ("I;16", "I")):
            img = img.convert(_COLOR_MODES[color_mode])
    else:
        from .. import io as tf_io

        channels = 4 if color_mode == "rgba" else 3
        pixels = tf_io.decode_image(contents, channels=channels).numpy()
        if color_mode == "grayscale":  # PIL's fixed-point ITU-R 601-2 luma, which TF's grayscale decode is not
            rgb = pixels.astype("uint32")
            pixels = ((rgb[..., 0] * 19595 + rgb[..., 1] * 38470 + rgb[..., 2] * 7471 + 0x8000) >> 16).astype("uint8")
        img = _Image(pixels, _COLOR_MODES[color_mode])
    if target_size is None:
        return img
    size = (int(target_size[1]), int(target_size[0]))
    if img.size == size:
        return img
    if interpolation not in _RESAMPLING:
        raise ValueError(f"load_img: invalid interpolation {interpolation!r}; use one of {', '.join(_RESAMPLING)}")
    box = _aspect_crop_box(img.size, size) if keep_aspect_ratio else [0, 0, img.size[0], img.size[1]]
    if _PIL is not None:
        resample = getattr(_PIL.Resampling, interpolation.upper())
        return img.resize(size, resample, box=box) if keep_aspect_ratio else img.resize(size, resample)
    if interpolation != "nearest":
        raise NotImplementedError(f"load_img with interpolation={interpolation!r} is not implemented by lockstep "
                                  "without PIL (see docs/python.md): install Pillow or use 'nearest'")
    # PIL's nearest: output pixel i samples the source at floor(left + (i + 0.5) * scale).
    rows = (box[1] + (_np.arange(size[1]) + 0.5) * (box[3] - box[1]) / size[1]).astype(int)
    cols = (box[0] + (_np.arange(size[0]) + 0.5) * (box[2] - box[0]) / size[0]).astype(int)
    return _Image(_np.asarray(img)[rows][:, cols], img.mode)


def img_to_array(img, data_format=None, dtype=None):
    """An image (PIL or array-like) as a NumPy array of floatx (or dtype), [h, w, c] or channels first."""
    data_format = _data_format(data_format)
    x = _np.asarray(img, dtype=dtype or floatx())
    if x.ndim == 2:
        x = x[:, :, None]
    elif x.ndim != 3:
        raise ValueError(f"img_to_array: unsupported image shape {x.shape}; expected [height, width(, channels)]")
    return x.transpose(2, 0, 1) if data_format == "channels_first" else x


def array_to_img(x, data_format=None, scale=True, dtype=None):
    """A rank-3 array as an image of 1 ("L", or "I" above 255), 3 ("RGB") or 4 ("RGBA") channels; scale maps the
    array's range onto [0, 255] first."""
    data_format = _data_format(data_format)
    x = _np.array(x, dtype=dtype or floatx())
    if x.ndim != 3:
        raise ValueError(f"array_to_img: expected an image array of rank 3 (single image), got shape {x.shape}")
    if data_format == "channels_first":
        x = x.transpose(1, 2, 0)
    if scale:
        x = x - x.min()
        top = x.max()
        if top != 0:
            x /= top
        x *= 255
    channels = x.shape[2]
    if channels not in (1, 3, 4):
        raise ValueError(f"array_to_img: unsupported channel number {channels}; use 1, 3 or 4")
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[channels]
    pixels = x[:, :, 0] if channels == 1 else x
    if channels == 1 and x.max() > 255:
        mode, pixels = "I", pixels.astype("int32")
    else:
        pixels = pixels.astype("uint8")
    if _PIL is not None:
        return _PIL.fromarray(pixels, mode)
    if mode == "I":
        raise NotImplementedError("array_to_img of values above 255 (mode 'I') needs PIL: install Pillow")
    return _Image(pixels, mode)


def save_img(path, x, data_format=None, file_format=None, scale=True, **kwargs):
    """Writes an image array to a file through array_to_img; the format comes from the file's extension."""
    if file_format is None and isinstance(path, (str, pathlib.Path)):
        file_format = pathlib.Path(path).suffix[1:].lower()
    if file_format and file_format.lower() == "jpg":
        file_format = "jpeg"
    img = array_to_img(x, data_format=data_format, scale=scale)
    if img.mode == "RGBA" and file_format == "jpeg":
        import warnings

        warnings.warn("The JPEG format does not support RGBA images, converting to RGB.")
        img = img.convert("RGB")
    img.save(path, format=file_format, **kwargs)


def _check_format(format, fn):
    if format == "grain":
        raise NotImplementedError(f"{fn} with format='grain' is not implemented by lockstep (see docs/python.md)")
    if format != "tf":
        raise ValueError(f"{fn}: format must be 'tf' or 'grain', got format={format!r}")


def _as_array(x):
    """A NumPy array of a lockstep tensor or anything array-like (a list, a pandas frame)."""
    return _np.asarray(x.numpy() if hasattr(x, "numpy") and not isinstance(x, _np.ndarray) else x)


def _positive_below(value, name, length):
    if value <= 0:
        raise ValueError(f"timeseries_dataset_from_array: {name} must be higher than 0, got {name}={value}")
    if value >= length:
        raise ValueError(f"timeseries_dataset_from_array: {name} must be lower than the length of the data, "
                         f"got {name}={value} for data of length {length}")


def _check_window_range(start_index, end_index, length):
    if start_index:
        if start_index < 0 or start_index >= length:
            raise ValueError(f"timeseries_dataset_from_array: start_index must be in [0, {length}) (the data's "
                             f"length), got start_index={start_index}")
    if end_index:
        if start_index and end_index <= start_index:
            raise ValueError(f"timeseries_dataset_from_array: end_index must be higher than start_index, got "
                             f"start_index={start_index}, end_index={end_index}")
        if end_index >= length or end_index <= 0:
            raise ValueError(f"timeseries_dataset_from_array: end_index must be in (0, {length}) (the data's "
                             f"length), got end_index={end_index}")


def timeseries_dataset_from_array(data, targets, sequence_length, sequence_stride=1, sampling_rate=1,
                                  batch_size=128, shuffle=False, seed=None, start_index=None, end_index=None,
                                  format="tf"):
    """(windows, targets) batches of sliding windows over data: the window starting at position i (counted from
    start_index) holds data[i + k * sampling_rate] for k < sequence_length and goes with targets[i]. Windows are
    gathered lazily, a batch at a time, so the data is never copied sequence_length times."""
    from ..data._dataset import AUTOTUNE, Dataset
    from ..data._structure import Structure, TensorSpec

    _check_format(format, "timeseries_dataset_from_array")
    data = _as_array(data)
    length = len(data)
    _check_window_range(start_index, end_index, length)
    _positive_below(sampling_rate, "sampling_rate", length)
    _positive_below(sequence_stride, "sequence_stride", length)
    start_index = start_index or 0
    end_index = length if end_index is None else end_index
    steps = data[start_index:end_index]
    targets = None if targets is None else _as_array(targets)
    labels = None if targets is None else targets[start_index:end_index]

    count = end_index - start_index - (sequence_length - 1) * sampling_rate
    if labels is not None:
        count = min(count, len(targets))
    starts = _np.arange(0, count, sequence_stride, dtype="int64")  # empty when the window outgrows the data
    if shuffle:
        if seed is None:
            seed = _np.random.randint(1e6)
        _np.random.RandomState(seed).shuffle(starts)  # Keras' order of windows before its buffered shuffle
    offsets = _np.arange(sequence_length, dtype="int64") * sampling_rate

    def gather(positions):
        positions = _np.asarray(positions.numpy())
        windows = steps[positions[..., None] + offsets]
        return windows if labels is None else (windows, labels[positions])

    dataset = Dataset.from_tensor_slices(starts)
    if shuffle:
        dataset = dataset.shuffle(1024 if batch_size is None else batch_size * 8, seed=seed)
    if batch_size is not None:
        dataset = dataset.batch(batch_size)
    # The spec TF gives (batch and window dimensions None) rather than the one the first batch would show.
    batch = [] if batch_size is None else [None]
    windows = TensorSpec(batch + [None] + list(steps.shape[1:]), _dtypes.as_dtype(steps.dtype))
    spec = windows if labels is None else (windows, TensorSpec(batch + list(labels.shape[1:]),
                                                               _dtypes.as_dtype(labels.dtype)))
    return Dataset(dataset.map(gather)._cpp, Structure(spec)).prefetch(AUTOTUNE)


def _index_text_files(directory, inferred, class_names, follow_links):
    """Keras' dataset_utils.index_directory for .txt files: (paths, labels or None, class names), with the class
    subfolders in sorted (or class_names') order and each one's files in sorted os.walk order."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"text_dataset_from_directory: directory {directory} does not exist or is not a "
                                "folder; check the path")
    if inferred:
        subdirs = [d for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names) <= set(subdirs):
                raise ValueError(f"text_dataset_from_directory: class_names {list(class_names)} do not match the "
                                 f"subfolders of {directory}: expected {subdirs} (or a subset of it)")
            subdirs = list(class_names)
    else:
        subdirs = [""]
    paths, labels = [], []
    for label, subdir in enumerate(subdirs):
        top = os.path.join(directory, subdir)
        for root, _, files in sorted(os.walk(top, followlinks=follow_links), key=lambda walked: walked[0]):
            for name in sorted(files):
                if name.lower().endswith(".txt"):
                    relative = os.path.relpath(os.path.join(root, name), top)
                    paths.append(os.path.join(directory, os.path.basename(top), relative))
                    labels.append(label)
    return paths, _np.array(labels, dtype="int32") if inferred else None, subdirs if inferred else None


def _validation_part(items, validation_split, subset):
    """dataset_utils.get_training_or_validation_split's slice, [:-0] (no validation file) included."""
    if not validation_split or items is None:
        return items
    num_val = int(validation_split * len(items))
    return items[:-num_val] if subset == "training" else items[-num_val:]


def _check_text_args(labels, label_mode, class_names, validation_split, subset, shuffle, seed):
    if labels not in ("inferred", None):
        if isinstance(labels, (list, tuple)):
            raise NotImplementedError("text_dataset_from_directory with labels=<a list> is not implemented by "
                                      "lockstep (see docs/python.md): use labels='inferred' or None")
        raise ValueError(f"text_dataset_from_directory: labels must be 'inferred', None or a list of integer "
                         f"labels, got labels={labels!r}")
    if label_mode not in ("int", "categorical", "binary", None):
        raise ValueError(f"text_dataset_from_directory: label_mode must be 'int', 'categorical', 'binary' or None, "
                         f"got label_mode={label_mode!r}")
    if (labels is None or label_mode is None) and class_names is not None:
        raise ValueError("text_dataset_from_directory: class_names cannot be given without labels (labels=None or "
                         "label_mode=None)")
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"text_dataset_from_directory: validation_split must be between 0 and 1, got "
                         f"{validation_split}")
    if bool(validation_split) != (subset is not None):
        raise ValueError(f"text_dataset_from_directory: give validation_split and subset together, got "
                         f"validation_split={validation_split}, subset={subset!r}")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f"text_dataset_from_directory: subset must be 'training', 'validation' or 'both', got "
                         f"subset={subset!r}")
    if validation_split and shuffle and seed is None:
        raise ValueError("text_dataset_from_directory: with validation_split and shuffle, give a seed so that the "
                         "training and validation subsets do not overlap")


def _text_dataset(paths, labels, label_mode, num_classes, max_length, batch_size, shuffle, seed):
    from .. import io as tf_io, strings
    from ..data._dataset import AUTOTUNE, Dataset

    def read(path):
        text = tf_io.read_file(path)
        return text if max_length is None else strings.substr(text, 0, max_length)

    if label_mode is None:
        dataset = Dataset.from_tensor_slices(paths)
    else:
        targets = {"int": lambda: labels,
                   "binary": lambda: labels.astype("float32")[:, None],
                   "categorical": lambda: _np.eye(num_classes, dtype="float32")[labels]}[label_mode]()
        dataset = Dataset.from_tensor_slices((paths, targets))
    if shuffle:
        dataset = dataset.shuffle(1024 if batch_size is None else batch_size * 8, seed=seed)
    dataset = dataset.map(read if label_mode is None else lambda path, label: (read(path), label))
    if batch_size is not None:
        dataset = dataset.batch(batch_size)
    return dataset.prefetch(AUTOTUNE)


def text_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, batch_size=32,
                                max_length=None, shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False, format="tf", verbose=True):
    """(texts, labels) batches from a folder of class subfolders of .txt files, with Keras' file order, seeded
    file shuffle and validation split; the dataset has class_names (a list of two datasets for subset="both")."""
    _check_format(format, "text_dataset_from_directory")
    _check_text_args(labels, label_mode, class_names, validation_split, subset, shuffle, seed)
    if labels is None or label_mode is None:
        labels = label_mode = None
    if seed is None:
        seed = _np.random.randint(1e6)
    directory = os.fspath(directory)
    paths, indices, names = _index_text_files(directory, labels == "inferred", class_names, follow_links)
    if verbose:
        print(f"Found {len(paths)} files." if names is None else
              f"Found {len(paths)} files belonging to {len(names)} classes.")
    if shuffle:  # Keras shuffles paths and labels with two generators of one seed: one permutation
        _np.random.RandomState(seed).shuffle(paths)
        if indices is not None:
            _np.random.RandomState(seed).shuffle(indices)
    if label_mode == "binary" and len(names) != 2:
        raise ValueError(f"text_dataset_from_directory: label_mode='binary' needs exactly 2 classes, got {names}")
    parts = ["training", "validation"] if subset == "both" else [subset]
    out = []
    for part in parts:
        part_paths = _validation_part(paths, validation_split, part)
        part_labels = _validation_part(indices, validation_split, part)
        if validation_split and verbose:
            print(f"Using {len(part_paths)} files for {part}.")
        if not part_paths:
            which = f"{part} " if subset == "both" else ""
            raise ValueError(f"text_dataset_from_directory: no {which}text files found in directory {directory} "
                             "(.txt files, in class subfolders when labels are inferred)")
        dataset = _text_dataset(part_paths, part_labels, label_mode, len(names or []), max_length, batch_size,
                                shuffle and part != "validation", seed)
        dataset.class_names = names
        dataset.file_paths = part_paths
        out.append(dataset)
    return out if subset == "both" else out[0]
