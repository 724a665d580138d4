"""Makes tests/golden/tfrecord/: TFRecord files of tf.train.Example records written by TensorFlow's own
tf.io.TFRecordWriter (plain and GZIP), a small CSV file, and expected.json with what TensorFlow reads from them:
every record's bytes, tf.io.parse_single_example / tf.io.parse_example results, and the batches of
tf.data.experimental.make_csv_dataset. tests/data/tfrecord_test.cc, example_test.cc and csv_test.cc compare
lockstep's readers with these values.

Generated with TensorFlow 2.21.0 (tensorflow-cpu wheel, Python 3.11). Rerun from the source root:
    /work/tfvenv/bin/python tests/golden/make_tfrecord_golden.py
(or any virtualenv with tensorflow-cpu). The values come from a fixed formula, so a rerun writes the same files.
"""
import base64
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tfrecord")
NUM_RECORDS = 12


def example(i):
    """Record i: fixed-length features, var-len lists of 0..3 values, a feature missing from every third record."""
    f = {
        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 3 - 1 + (1 << 40) * (i % 2)])),
        "image": tf.train.Feature(float_list=tf.train.FloatList(value=[0.25 * i + 0.1 * k for k in range(6)])),
        "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"rec-%d" % i + bytes([0, 255])])),
        "tags": tf.train.Feature(int64_list=tf.train.Int64List(value=[10 * i + k for k in range(i % 4)])),
        "scores": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 8.0 - k for k in range((i + 1) % 3)])),
        "words": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"w%d" % k * (i + 1) for k in range(i % 3)])),
    }
    if i % 3 != 2:
        f["weight"] = tf.train.Feature(float_list=tf.train.FloatList(value=[1.5 + i]))
    return tf.train.Example(features=tf.train.Features(feature=f))


SPEC = {
    "label": tf.io.FixedLenFeature([], tf.int64),
    "image": tf.io.FixedLenFeature([2, 3], tf.float32),
    "name": tf.io.FixedLenFeature([], tf.string),
    "weight": tf.io.FixedLenFeature([], tf.float32, default_value=-1.0),
    "tags": tf.io.VarLenFeature(tf.int64),
    "scores": tf.io.VarLenFeature(tf.float32),
    "words": tf.io.VarLenFeature(tf.string),
}


def to_json(t):
    """A parsed value: dense tensors as {dtype, shape, values}, sparse ones with TF's three components; floats as
    the exact double of the float32, bytes as base64."""
    if isinstance(t, tf.SparseTensor):
        return {"indices": t.indices.numpy().tolist(), "values": to_json(t.values), "dense_shape": t.dense_shape.numpy().tolist()}
    a = np.asarray(t.numpy())
    if t.dtype == tf.string:
        values = [base64.b64encode(v).decode() for v in a.reshape(-1)]
    elif t.dtype == tf.float32:
        values = [float(v) for v in a.reshape(-1)]
    else:
        values = [int(v) for v in a.reshape(-1)]
    return {"dtype": t.dtype.name, "shape": list(a.shape), "values": values}


def tfrecords(expected):
    records = [example(i).SerializeToString() for i in range(NUM_RECORDS)]
    for name, options in (("examples.tfrecord", None), ("examples.tfrecord.gz", tf.io.TFRecordOptions(compression_type="GZIP"))):
        with tf.io.TFRecordWriter(os.path.join(OUT, name), options) as w:
            for r in records:
                w.write(r)
        compression = "GZIP" if options else ""
        read = [r.numpy() for r in tf.data.TFRecordDataset(os.path.join(OUT, name), compression_type=compression)]
        assert read == records
    expected["records"] = [base64.b64encode(r).decode() for r in records]
    expected["single"] = [{k: to_json(v) for k, v in tf.io.parse_single_example(r, SPEC).items()} for r in records]
    expected["batch"] = {k: to_json(v) for k, v in tf.io.parse_example(tf.constant(records), SPEC).items()}


CSV = (
    "id,note,x1,x2,label,x3\n"
    '1,plain,0.5,2,0,-1\n'
    '2,"with, comma",1.5,"3",1,-2.25\n'
    '3,"say ""hi""",2.5,4,2,\n'  # an empty field takes the column's default (0)
    '4,"two\nlines",3.5,5,1,-4\n'
    '5,,4.5,6e1,0,-5\n'
    '6,last,5.5,7,2,-6.5\n'
    '7,x,6.5,8,1,-7\n'
)


def csv(expected):
    path = os.path.join(OUT, "rows.csv")
    with open(path, "w", newline="") as f:
        f.write(CSV)
    ds = tf.data.experimental.make_csv_dataset(path, batch_size=3, label_name="label", select_columns=["x1", "x2", "label", "x3"],
                                               num_epochs=1, shuffle=False)
    batches = []
    for features, label in ds:
        x = np.stack([features[c].numpy().astype(np.float32) for c in ("x1", "x2", "x3")], axis=1)
        batches.append({"x": to_json(tf.constant(x)), "y": to_json(label)})
    expected["csv"] = {"file": "rows.csv", "batch_size": 3, "label_name": "label", "select_columns": ["x1", "x2", "label", "x3"],
                       "feature_columns": ["x1", "x2", "x3"], "batches": batches}


def main():
    os.makedirs(OUT, exist_ok=True)
    expected = {"tensorflow": tf.__version__}
    tfrecords(expected)
    csv(expected)
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
