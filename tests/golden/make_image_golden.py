#!/usr/bin/env python3
"""Golden values for lockstep's image decoding and keras::utils::image_dataset_from_directory.

Writes a small tree of PNG and JPEG images (tests/golden/image_data/: three classes, odd sizes, gray, RGBA,
palette, 1- and 16-bit PNGs, gray and progressive JPEGs, a nested folder, files Keras skips) and what TensorFlow
2.21 / Keras 3 make of it (tests/golden/image_golden.json): tf.io.decode_image for every file and channel count,
tf.image.resize samples, numpy's RandomState shuffle, and image_dataset_from_directory's file order, labels,
images and printed lines for several option sets. Run with the TF venv: /work/tfvenv/bin/python make_image_golden.py
"""
import contextlib
import io
import json
import os
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from PIL import Image  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "image_data")


def pattern(h, w, c, salt):
    """Smooth gradients plus a little noise: distinct per file, and compressible for JPEG."""
    rng = np.random.RandomState(salt)
    y, x = np.mgrid[0:h, 0:w]
    planes = []
    for k in range(c):
        base = 40 + 170 * ((x * (k + 1) + y * (3 - k % 3) + salt * 7) % (w + h)) / (w + h)
        planes.append(base + rng.randint(-20, 21, size=(h, w)))
    return np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)


def write_images():
    shutil.rmtree(ROOT, ignore_errors=True)

    def save(rel, image, **kw):
        path = os.path.join(ROOT, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        image.save(path, **kw)

    save("ants/a0.png", Image.fromarray(pattern(9, 12, 3, 1), "RGB"))
    save("ants/a1.jpg", Image.fromarray(pattern(10, 10, 3, 2), "RGB"), quality=90)
    save("ants/a2.JPEG", Image.fromarray(pattern(7, 11, 1, 3)[:, :, 0], "L"), format="JPEG", quality=85)
    palette = Image.fromarray(pattern(8, 6, 3, 4), "RGB").quantize(colors=16)
    palette.info["transparency"] = 3  # a tRNS chunk: palette index 3 is transparent
    save("ants/nested/a3.png", palette, transparency=3)
    save("ants/w_jpeg444.jpg", Image.fromarray(pattern(9, 9, 3, 5), "RGB"), quality=95, subsampling=0)
    with open(os.path.join(ROOT, "ants/notes.txt"), "w") as f:
        f.write("not an image: Keras skips it\n")
    save("bees/b0.png", Image.fromarray(pattern(11, 7, 1, 6)[:, :, 0], "L"))
    save("bees/b1.png", Image.fromarray(pattern(6, 10, 4, 7), "RGBA"))
    save("bees/b2.jpg", Image.fromarray(pattern(12, 8, 3, 8), "RGB"), quality=80, progressive=True)
    rgb16 = pattern(5, 5, 3, 9).astype(np.uint16) * 257 + np.arange(75, dtype=np.uint16).reshape(5, 5, 3)
    tf.io.write_file(os.path.join(ROOT, "bees/b3.PNG"), tf.io.encode_png(tf.constant(rgb16)))
    save("wasps/w0.png", Image.fromarray(pattern(13, 9, 1, 10)[:, :, 0] > 120))  # mode "1": a 1-bit PNG
    save("wasps/w1.png", Image.fromarray(pattern(7, 7, 2, 11), "LA"))
    save("wasps/w3.png", Image.fromarray(pattern(15, 4, 3, 12), "RGB"))
    save("wasps/w4.png", Image.fromarray(pattern(3, 3, 3, 13), "RGB"))
    # Keras skips folders starting with "." and loose files when labels are inferred, not when labels=None.
    save(".hidden/h0.png", Image.fromarray(pattern(4, 5, 3, 14), "RGB"))
    save("root.png", Image.fromarray(pattern(6, 6, 3, 15), "RGB"))


def rel(path):
    return os.path.relpath(path, ROOT)


def all_image_files():
    out = []
    for root, _, files in os.walk(ROOT):
        for f in files:
            if f.lower().endswith((".png", ".jpg", ".jpeg")):
                out.append(rel(os.path.join(root, f)))
    return sorted(out)


def f32_list(a):
    """float32 values as the shortest decimal that reads back to the same float32."""
    return [float(str(v)) for v in np.asarray(a, np.float32).ravel()]


def decode_golden():
    out = {}
    for f in all_image_files():
        data = tf.io.read_file(os.path.join(ROOT, f))
        entry = {}
        for ch in (0, 1, 3, 4):
            try:
                img = tf.io.decode_image(data, channels=ch, expand_animations=False).numpy()
                entry[str(ch)] = {"shape": list(img.shape), "values": img.ravel().tolist()}
            except tf.errors.InvalidArgumentError as e:
                assert "JPEG does not support 4 channels" in str(e), e
                entry[str(ch)] = {"error": "JPEG does not support 4 channels"}
        out[f] = entry
    return out


def resize_golden():
    out = []
    for f, size, method in [("ants/a0.png", (8, 8), "bilinear"), ("ants/a0.png", (4, 5), "bilinear"),
                            ("ants/a0.png", (20, 13), "bilinear"), ("bees/b1.png", (3, 17), "bilinear"),
                            ("wasps/w3.png", (8, 8), "nearest"), ("wasps/w3.png", (31, 3), "nearest"),
                            ("bees/b0.png", (11, 7), "bilinear")]:
        img = tf.io.decode_image(tf.io.read_file(os.path.join(ROOT, f)), expand_animations=False)
        r = tf.image.resize(img, size, method=method).numpy()
        out.append({"file": f, "size": list(size), "method": method, "dtype": r.dtype.name,
                    "shape": list(r.shape), "values": f32_list(r)})
    return out


def shuffle_golden():
    out = []
    for n, seed in [(1, 3), (2, 0), (10, 1337), (300, 0), (300, 123456), (257, 2**32 - 1)]:
        perm = list(range(n))
        np.random.RandomState(seed).shuffle(perm)
        out.append({"n": n, "seed": seed, "permutation": perm})
    return out


# Option sets for image_dataset_from_directory; images are stored once per (color_mode, size, interpolation, crop).
CONFIGS = [
    {"name": "unshuffled_int", "kw": {"image_size": (8, 8), "batch_size": 4, "shuffle": False}},
    {"name": "shuffled_both_categorical",
     "kw": {"image_size": (8, 8), "batch_size": 3, "shuffle": True, "seed": 42, "validation_split": 0.25,
            "subset": "both", "label_mode": "categorical"}},
    {"name": "grayscale_binary_nearest",
     "kw": {"image_size": (5, 7), "batch_size": None, "shuffle": False, "color_mode": "grayscale",
            "class_names": ["bees", "ants"], "label_mode": "binary", "interpolation": "nearest"}},
    {"name": "rgba_one_class_crop",
     "kw": {"image_size": (6, 4), "batch_size": 2, "shuffle": False, "color_mode": "rgba",
            "class_names": ["wasps"], "crop_to_aspect_ratio": True}},
    {"name": "no_labels_grayscale_crop",
     "kw": {"image_size": (4, 6), "batch_size": 5, "shuffle": False, "labels": None, "color_mode": "grayscale",
            "crop_to_aspect_ratio": True}},
    {"name": "validation_unshuffled",
     "kw": {"image_size": (8, 8), "batch_size": 4, "shuffle": False, "validation_split": 0.3,
            "subset": "validation"}},
    {"name": "training_shuffled_seed",
     "kw": {"image_size": (8, 8), "batch_size": 4, "shuffle": True, "seed": 7, "validation_split": 0.3,
            "subset": "training"}},
]


def image_key(kw):
    return "{}_{}x{}_{}{}".format(kw.get("color_mode", "rgb"), kw["image_size"][0], kw["image_size"][1],
                                  kw.get("interpolation", "bilinear"),
                                  "_crop" if kw.get("crop_to_aspect_ratio") else "")


SHUFFLED_EPOCHS = 3  # a new iterator over a shuffled dataset draws a new order: TF's order for each of these


def iterate(ds):
    """The yielded batch sizes, images (numpy) and labels (lists) of one pass, in order."""
    batches, images, labels, dtype = [], [], [], None
    for element in ds:
        x, y = (element if isinstance(element, tuple) else (element, None))
        x = x.numpy()
        batched = x.ndim == 4
        xs = x if batched else x[None]
        batches.append(int(xs.shape[0]) if batched else None)
        dtype = x.dtype.name
        images += list(xs)
        if y is not None:
            ys = y.numpy() if batched else y.numpy()[None]
            labels += [v.tolist() for v in ys]
    return batches, images, labels, dtype


def dataset_record(ds, shuffled, images):
    """Class names, file order, batch sizes, and per epoch the files (identified by their images) and labels in
    the order yielded; the images of an unshuffled set are added to `images` by file."""
    rec = {"class_names": ds.class_names, "file_paths": [rel(p) for p in ds.file_paths], "epochs": []}
    yields = []
    for _ in range(SHUFFLED_EPOCHS if shuffled else 1):
        batches, xs, labels, rec["dtype"] = iterate(ds)
        rec["batches"] = batches
        yields.append((xs, labels))
    if not shuffled:
        for f, x in zip(rec["file_paths"], yields[0][0]):
            images[f] = f32_list(x)
    return rec, yields


def identify(rec, yields, images):
    """Names the file behind every yielded image (each file's image is distinct)."""
    by_image = {tuple(v): f for f, v in images.items() if f in rec["file_paths"]}
    assert len(by_image) == len(rec["file_paths"]), "two files give the same image"
    for xs, labels in yields:
        rec["epochs"].append({"order": [by_image[tuple(f32_list(x))] for x in xs], "labels": labels})


def dataset_golden():
    out, images, pending = {}, {}, []
    for config in CONFIGS:
        kw = dict(config["kw"])
        key = image_key(kw)
        captured = io.StringIO()
        with contextlib.redirect_stdout(captured):
            result = keras.utils.image_dataset_from_directory(ROOT, **kw)
        datasets = result if kw.get("subset") == "both" else [result]
        recs = []
        for k, ds in enumerate(datasets):
            shuffled = kw.get("shuffle", True) and k == 0  # subset="both" never shuffles validation
            rec, yields = dataset_record(ds, shuffled, images.setdefault(key, {}))
            rec["image_key"] = key
            recs.append(rec)
            pending.append((rec, yields, kw))
        kw["image_size"] = list(kw["image_size"])
        out[config["name"]] = {"options": kw, "printed": captured.getvalue().splitlines(), "datasets": recs}
    # A shuffled set's files need their images too: from an unshuffled run with the same options.
    for rec, yields, kw in pending:
        key = image_key(kw)
        if set(rec["file_paths"]) - set(images[key]):
            kw = {k: v for k, v in kw.items() if k not in ("seed", "validation_split", "subset")}
            kw["shuffle"] = False
            with contextlib.redirect_stdout(io.StringIO()):
                ds = keras.utils.image_dataset_from_directory(ROOT, **kw)
            dataset_record(ds, False, images[key])
        identify(rec, yields, images[key])
    return out, images


def tf_shuffle_golden():
    """tf.data's shuffle(buffer_size, seed) order for successive iterators, smaller and larger buffers than data."""
    out = []
    for n, buffer_size, seed in [(10, 24, 42), (50, 8, 7), (100, 16, 0), (33, 32, 123)]:
        ds = tf.data.Dataset.range(n).shuffle(buffer_size, seed=seed)
        out.append({"n": n, "buffer_size": buffer_size, "seed": seed,
                    "epochs": [[int(v) for v in ds] for _ in range(SHUFFLED_EPOCHS)]})
    return out


def main():
    write_images()
    datasets, images = dataset_golden()
    golden = {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__,
              "decode": decode_golden(), "resize": resize_golden(), "numpy_shuffle": shuffle_golden(),
              "tf_shuffle": tf_shuffle_golden(),
              "datasets": datasets, "images": images}
    with open(os.path.join(HERE, "image_golden.json"), "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(ROOT) for f in fs)
    print(f"wrote {ROOT} ({total} bytes) and image_golden.json "
          f"({os.path.getsize(os.path.join(HERE, 'image_golden.json'))} bytes)")


if __name__ == "__main__":
    main()
