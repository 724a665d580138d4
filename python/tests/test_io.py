"""tf.io from Python (deliverable 4 of issue 22): gfile, TFRecord files and tf.train.Example, agreeing with
TensorFlow in both directions."""
import os

import numpy as np
import pytest

import lockstep as tf
from conftest import tensorflow_or_skip
from lockstep.io import _example as pb

SPEC = {
    "image": ("fixed", [2, 3], "float32"),
    "label": ("fixed", [], "int64"),
    "name": ("fixed", [], "string"),
    "tags": ("var", None, "int64"),
}


def feature_spec(m):
    """SPEC in module m's feature classes (lockstep or TensorFlow)."""
    return {k: m.io.FixedLenFeature(shape, getattr(m, dtype)) if kind == "fixed" else m.io.VarLenFeature(
        getattr(m, dtype)) for k, (kind, shape, dtype) in SPEC.items()}


def examples(train):
    """Three Examples made with the message classes of `train` (lockstep.io._example or tf.train)."""
    out = []
    for i in range(3):
        out.append(train.Example(features=train.Features(feature={
            "image": train.Feature(float_list=train.FloatList(value=(np.arange(6) * 0.5 + i).tolist())),
            "label": train.Feature(int64_list=train.Int64List(value=[i - 1])),
            "name": train.Feature(bytes_list=train.BytesList(value=[b"ex%d" % i])),
            "tags": train.Feature(int64_list=train.Int64List(value=list(range(i)))),
        })))
    return out


def check_parsed(parsed, i):
    np.testing.assert_array_equal(parsed["image"].numpy(), (np.arange(6) * 0.5 + i).reshape(2, 3))
    assert parsed["image"].dtype == tf.float32 and int(parsed["label"]) == i - 1
    assert parsed["name"].numpy() == b"ex%d" % i
    np.testing.assert_array_equal(np.asarray(parsed["tags"].values), np.arange(i))


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_tfrecords_written_by_tensorflow_are_read_by_lockstep(tmp_path, compression):
    real_tf = tensorflow_or_skip()
    path = str(tmp_path / "tf.tfrecord")
    with real_tf.io.TFRecordWriter(path, options=compression or None) as w:
        for ex in examples(real_tf.train):
            w.write(ex.SerializeToString())
    ds = tf.data.TFRecordDataset(path, compression_type=compression)
    for i, record in enumerate(ds):
        check_parsed(tf.io.parse_single_example(record, feature_spec(tf)), i)
        assert pb.Example.FromString(record.numpy()) == examples(pb)[i]
    batch = next(iter(ds.map(lambda r: tf.io.parse_single_example(
        r, {k: v for k, v in feature_spec(tf).items() if k != "tags"})).batch(3)))
    np.testing.assert_array_equal(batch["label"].numpy(), [-1, 0, 1])
    assert list(batch["name"].numpy()) == [b"ex0", b"ex1", b"ex2"]
    # Records of different lengths batch (as tf.string vectors) and parse a batch at a time.
    dense = {k: v for k, v in feature_spec(tf).items() if k != "tags"}
    batches = list(ds.batch(2).map(lambda records: tf.io.parse_example(records, dense)))
    np.testing.assert_array_equal(batches[0]["label"].numpy(), [-1, 0])
    assert list(batches[1]["name"].numpy()) == [b"ex2"] and batches[1]["image"].shape == [1, 2, 3]


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_tfrecords_written_by_lockstep_are_read_by_tensorflow(tmp_path, compression):
    real_tf = tensorflow_or_skip()
    path = str(tmp_path / "lockstep.tfrecord")
    with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=compression)) as w:
        for ex in examples(pb):
            w.write(ex.SerializeToString())
    for i, record in enumerate(real_tf.data.TFRecordDataset(path, compression_type=compression)):
        parsed = real_tf.io.parse_single_example(record, feature_spec(real_tf))
        parsed["tags"] = real_tf.sparse.to_dense(parsed["tags"])
        np.testing.assert_array_equal(parsed["image"].numpy(), (np.arange(6) * 0.5 + i).reshape(2, 3))
        assert parsed["name"].numpy() == b"ex%d" % i and int(parsed["label"]) == i - 1
        np.testing.assert_array_equal(parsed["tags"].numpy(), np.arange(i))


def test_list_files_feeds_tfrecord_dataset(tmp_path):
    for i in range(3):
        with tf.io.TFRecordWriter(str(tmp_path / f"part-{i}.tfrecord")) as w:
            w.write(b"record %d" % i)
    files = tf.data.Dataset.list_files(str(tmp_path / "part-*.tfrecord"), shuffle=False)
    assert [os.path.basename(f) for f in files.as_numpy_iterator()] == [b"part-0.tfrecord", b"part-1.tfrecord",
                                                                        b"part-2.tfrecord"]
    shuffled = tf.data.Dataset.list_files(str(tmp_path / "*.tfrecord"), seed=3)
    assert sorted(shuffled.as_numpy_iterator()) == list(files.as_numpy_iterator())
    assert list(tf.data.TFRecordDataset(files).as_numpy_iterator()) == [b"record 0", b"record 1", b"record 2"]
    mixed = files.interleave(tf.data.TFRecordDataset, cycle_length=2, num_parallel_calls=tf.data.AUTOTUNE)
    assert list(mixed.as_numpy_iterator()) == [b"record 0", b"record 1", b"record 2"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="no files match"):
        tf.data.Dataset.list_files(str(tmp_path / "*.nothing"))


def test_a_dataset_of_strings_is_written_as_tfrecords(tmp_path):
    path = str(tmp_path / "ds.tfrecord")
    records = tf.data.Dataset.from_generator(lambda: (b"r%d" % i * i for i in range(4)), output_types=tf.string,
                                             output_shapes=())
    tf.data.experimental.TFRecordWriter(path, compression_type="GZIP").write(records)
    assert list(tf.data.TFRecordDataset(path, "GZIP").as_numpy_iterator()) == [b"", b"r1", b"r2r2", b"r3r3r3"]
    with pytest.raises(TypeError, match="tf.string scalars"):
        tf.data.experimental.TFRecordWriter(path).write(tf.data.Dataset.range(3))


def test_example_bytes_are_tensorflows():
    real_tf = tensorflow_or_skip()
    for ours, theirs in zip(examples(pb), examples(real_tf.train)):
        assert ours.SerializeToString() == theirs.SerializeToString(deterministic=True)
        assert pb.Example.FromString(theirs.SerializeToString()) == ours
        assert real_tf.train.Example.FromString(ours.SerializeToString()) == theirs
        one = {"image": ours.features.feature["image"]}
        assert str(pb.Features(feature=one)) == str(real_tf.train.Features(feature={
            "image": theirs.features.feature["image"]}))  # (TF prints a map in its own order: one entry here)
    big = pb.Feature(int64_list=pb.Int64List(value=[-2**63, 2**63 - 1, 0]))
    assert real_tf.train.Feature.FromString(big.SerializeToString()).int64_list.value == [-2**63, 2**63 - 1, 0]


def test_example_messages_behave_as_protobufs():
    ex = pb.Example()
    ex.features.feature["x"].float_list.value.extend([1.0, 2.5])
    ex.features.feature["y"].int64_list.value.append(7)
    assert ex.features.feature["x"].WhichOneof("kind") == "float_list"
    assert pb.Example.FromString(ex.SerializeToString()) == ex and ex.ByteSize() == len(ex.SerializeToString())
    copy = pb.Example()
    copy.CopyFrom(ex)
    assert copy == ex and copy is not ex
    with pytest.raises(TypeError):
        pb.BytesList(value=["text"])  # bytes fields take bytes, as in protobuf
    with pytest.raises(TypeError):
        pb.Int64List(value=[1.5])
    with pytest.raises(pb.DecodeError):
        pb.Example.FromString(b"\x0a\x05ab")


def test_parse_example_agrees_with_tensorflow():
    real_tf = tensorflow_or_skip()
    records = [ex.SerializeToString() for ex in examples(pb)]
    ours = tf.io.parse_example(records, feature_spec(tf))
    theirs = real_tf.io.parse_example(records, feature_spec(real_tf))
    for key in ("image", "label"):
        np.testing.assert_array_equal(ours[key].numpy(), theirs[key].numpy())
    assert list(ours["name"].numpy()) == list(theirs["name"].numpy())
    for part in ("indices", "values", "dense_shape"):
        np.testing.assert_array_equal(getattr(ours["tags"], part).numpy(), getattr(theirs["tags"], part).numpy())
    with_default = {"missing": tf.io.FixedLenFeature([2], tf.float32, default_value=[1.0, 2.0])}
    np.testing.assert_array_equal(tf.io.parse_single_example(records[0], with_default)["missing"].numpy(), [1, 2])


def test_parse_errors_are_one_line():
    record = examples(pb)[0].SerializeToString()
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.io.parse_single_example(record, {"absent": tf.io.FixedLenFeature([], tf.int64)})
    assert "absent" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.io.parse_single_example(record, {"label": tf.io.FixedLenFeature([], tf.float32)})
    assert "label" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError, match="int64, float32 or string"):
        tf.io.parse_single_example(record, {"label": tf.io.FixedLenFeature([], tf.int32)})
    with pytest.raises(NotImplementedError, match="tf.io.decode_gif is not implemented by lockstep"):
        tf.io.decode_gif


def gfile_tree(root, m):
    """Builds a small tree with module m's gfile and reports what gfile says of it."""
    g = m.io.gfile
    g.makedirs(os.path.join(root, "a", "b"))
    g.makedirs(os.path.join(root, "a", "b"))  # already there: fine
    g.mkdir(os.path.join(root, "c"))
    with g.GFile(os.path.join(root, "a", "f.txt"), "w") as f:
        f.write("line one\nline two\n")
    with g.GFile(os.path.join(root, "a", "b", "g.bin"), "wb") as f:
        f.write(b"\x00\x01\x02")
    g.copy(os.path.join(root, "a", "f.txt"), os.path.join(root, "c", "copy.txt"))
    g.rename(os.path.join(root, "c", "copy.txt"), os.path.join(root, "c", "moved.txt"))
    with g.GFile(os.path.join(root, "c", "moved.txt")) as f:
        lines = list(f)
    with g.GFile(os.path.join(root, "a", "b", "g.bin"), "rb") as f:
        raw = f.read()
    report = {
        "exists": [g.exists(os.path.join(root, p)) for p in ("a", "a/f.txt", "nope")],
        "isdir": [g.isdir(os.path.join(root, p)) for p in ("a", "a/f.txt")],
        "listdir": sorted(g.listdir(os.path.join(root, "a"))),
        "glob": sorted(os.path.relpath(p, root) for p in g.glob(os.path.join(root, "*", "*.txt"))),
        "walk": sorted((os.path.relpath(d, root), sorted(ds), sorted(fs)) for d, ds, fs in g.walk(root)),
        "lines": lines, "raw": raw, "size": g.stat(os.path.join(root, "a", "f.txt")).length,
    }
    g.remove(os.path.join(root, "c", "moved.txt"))
    g.rmtree(os.path.join(root, "a"))
    report["after"] = sorted(g.listdir(root))
    return report


def test_gfile_agrees_with_tensorflow(tmp_path):
    ours = gfile_tree(str(tmp_path / "ours"), tf)
    assert ours["lines"] == ["line one\n", "line two\n"] and ours["raw"] == b"\x00\x01\x02"
    assert ours["exists"] == [True, True, False] and ours["after"] == ["c"]
    real_tf = tensorflow_or_skip()
    theirs = gfile_tree(str(tmp_path / "theirs"), real_tf)
    theirs["listdir"] = sorted(d.rstrip("/") for d in theirs["listdir"])
    ours["listdir"] = sorted(d.rstrip("/") for d in ours["listdir"])
    assert ours == theirs


def test_gfile_errors_are_tensorflows_classes(tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(tf.errors.NotFoundError) as e:
        tf.io.gfile.GFile(missing).read()
    assert "missing" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.remove(missing)
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.listdir(missing)
    (tmp_path / "file").write_text("x")
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.io.gfile.copy(str(tmp_path / "file"), str(tmp_path / "file2")) or tf.io.gfile.copy(
            str(tmp_path / "file"), str(tmp_path / "file2"))
    tf.io.gfile.copy(str(tmp_path / "file"), str(tmp_path / "file2"), overwrite=True)
    assert issubclass(tf.errors.NotFoundError, tf.errors.OpError)


def test_read_and_write_file(tmp_path):
    path = str(tmp_path / "blob")
    tf.io.write_file(path, b"\x01bytes")
    content = tf.io.read_file(path)
    assert content.dtype == tf.string and content.numpy() == b"\x01bytes"


def test_read_file_takes_a_string_tensor_as_a_map_function_gets_it(tf, tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"hi")
    files = tf.data.Dataset.from_tensor_slices([str(path)])
    assert [bytes(x) for x in files.map(tf.io.read_file)] == [b"hi"]
    assert bytes(tf.io.read_file(tf.constant(str(path)))) == b"hi"
    with pytest.raises(ValueError, match="scalar string"):
        tf.io.read_file(tf.constant([str(path)]))
