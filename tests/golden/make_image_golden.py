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


def dataset_record(ds, unshuffled):
    """File order, labels and batch sizes as yielded; images kept per file when the order is known."""
    rec = {"class_names": ds.class_names, "file_paths": [rel(p) for p in ds.file_paths], "batches": [],
           "labels": [], "images": {}}
    idx = 0
    for element in ds:
        x, y = (element if isinstance(element, tuple) else (element, None))
        x = x.numpy()
        batched = x.ndim == 4
        xs = x if batched else x[None]
        rec["batches"].append(int(xs.shape[0]) if batched else None)
        rec["dtype"] = x.dtype.name
        if y is not None:
            ys = y.numpy() if batched else y.numpy()[None]
            rec["labels"] += [v.tolist() for v in ys]
        for image in xs:
            if unshuffled:
                rec["images"][rec["file_paths"][idx]] = f32_list(image)
            idx += 1
    return rec


def dataset_golden():
    out, images = {}, {}
    for config in CONFIGS:
        kw = dict(config["kw"])
        captured = io.StringIO()
        with contextlib.redirect_stdout(captured):
            result = keras.utils.image_dataset_from_directory(ROOT, **kw)
        datasets = result if kw.get("subset") == "both" else [result]
        recs = []
        for k, ds in enumerate(datasets):
            unshuffled = not kw.get("shuffle", True) or k == 1  # subset="both" never shuffles validation
            rec = dataset_record(ds, unshuffled)
            key = image_key(kw)
            images.setdefault(key, {}).update(rec.pop("images"))
            rec["image_key"] = key
            recs.append(rec)
        kw["image_size"] = list(kw["image_size"])
        out[config["name"]] = {"options": kw, "printed": captured.getvalue().splitlines(), "datasets": recs}
    # Every file that a shuffled set yields needs its image too (from an unshuffled run with the same options).
    for config in CONFIGS:
        kw = dict(config["kw"])
        key = image_key(kw)
        names = {p for rec in out[config["name"]]["datasets"] for p in rec["file_paths"]}
        if names - set(images[key]):
            for k in ("seed", "validation_split", "subset"):
                kw.pop(k, None)
            kw["shuffle"] = False
            with contextlib.redirect_stdout(io.StringIO()):
                ds = keras.utils.image_dataset_from_directory(ROOT, **kw)
            images[key].update(dataset_record(ds, True)["images"])
    return out, images


def main():
    write_images()
    datasets, images = dataset_golden()
    golden = {"tensorflow": tf.__version__, "keras": keras.__version__, "numpy": np.__version__,
              "decode": decode_golden(), "resize": resize_golden(), "numpy_shuffle": shuffle_golden(),
              "datasets": datasets, "images": images}
    with open(os.path.join(HERE, "image_golden.json"), "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(ROOT) for f in fs)
    print(f"wrote {ROOT} ({total} bytes) and image_golden.json "
          f"({os.path.getsize(os.path.join(HERE, 'image_golden.json'))} bytes)")


if __name__ == "__main__":
    main()
