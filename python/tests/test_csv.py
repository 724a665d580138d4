"""tf.io.decode_csv and tf.data.experimental.CsvDataset: values against TensorFlow 2.21, and TF's errors."""
import numpy as np
import pytest

from conftest import tensorflow_or_skip

DECODES = [
    ("basic", lambda tf: tf.io.decode_csv(["1,2.5,a", "3,,b"], [[0], [0.0], [""]])),
    ("scalar", lambda tf: tf.io.decode_csv("1,2", [[0], [0]])),
    ("wide", lambda tf: tf.io.decode_csv(["12345678901,0.1"], [tf.constant([0], tf.int64),
                                                              tf.constant([0], tf.float64)])),
    ("quote", lambda tf: tf.io.decode_csv(['"a,b","x""y"'], [[""], [""]])),
    ("no_quote", lambda tf: tf.io.decode_csv(['"a",b'], [[""], [""]], use_quote_delim=False)),
    ("na", lambda tf: tf.io.decode_csv(["NA,2"], [[7], [0]], na_value="NA")),
    ("delim", lambda tf: tf.io.decode_csv(["1|2"], [[0], [0]], field_delim="|")),
    ("select", lambda tf: tf.io.decode_csv(["1,2,3"], [[0], [0]], select_cols=[0, 2])),
    ("2d", lambda tf: tf.io.decode_csv([["1,2"], ["3,4"]], [[0], [0]])),
    ("spaces", lambda tf: tf.io.decode_csv([" 1 , 2.5 "], [[0], [0.0]])),
    ("empty_strings", lambda tf: tf.io.decode_csv([","], [["d"], ["e"]])),
    ("inf", lambda tf: tf.io.decode_csv(["inf,-1e3"], [[0.0], [0.0]])),
]


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype.name == w.dtype.name
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_array_equal(np.asarray(g.numpy()), w.numpy())


@pytest.mark.parametrize("name,fn", DECODES, ids=[c[0] for c in DECODES])
def test_decode_csv_agrees_with_tensorflow(tf, name, fn):
    real = tensorflow_or_skip()
    _same(fn(tf), fn(real))


@pytest.mark.parametrize("call,error", [
    (lambda tf: tf.io.decode_csv(["1,2,3"], [[0], [0]]), "InvalidArgumentError"),
    (lambda tf: tf.io.decode_csv(["1,x"], [[0], [0.0]]), "InvalidArgumentError"),
    (lambda tf: tf.io.decode_csv(["1.5,2"], [[0], [0.0]]), "InvalidArgumentError"),
    (lambda tf: tf.io.decode_csv(["1,"], [[0], tf.constant([], tf.int32)]), "InvalidArgumentError"),
    (lambda tf: tf.io.decode_csv(['a"b,c'], [[""], [""]]), "InvalidArgumentError"),
    (lambda tf: tf.io.decode_csv(["1"], [[1, 2]]), "InvalidArgumentError"),
    (lambda tf: tf.io.decode_csv(["1"], [[5]], field_delim="ab"), "InvalidArgumentError"),
    (lambda tf: tf.io.decode_csv(["1,2,3"], [[0], [0]], select_cols=[2, 0]), "ValueError"),
    (lambda tf: tf.io.decode_csv(["1,2"], [tf.int32, tf.float32]), "ValueError"),
])
def test_decode_csv_bad_input(tf, call, error):
    with pytest.raises(Exception) as info:
        call(tf)
    assert type(info.value).__name__ == error


def _csv(tmp_path, text, name="a.csv"):
    path = tmp_path / name
    path.write_bytes(text.encode())
    return str(path)


DATASETS = [
    ("header", dict(record_defaults=[[0], [0.0], [""]], header=True)),
    ("dtypes", dict(record_defaults=["int32", [0.0], [""]], header=True)),
    ("select", dict(record_defaults=[[0], [""]], header=True, select_cols=[0, 2])),
    ("exclude", dict(record_defaults=[[0], [""]], header=True, exclude_cols=[1])),
]


@pytest.mark.parametrize("name,kwargs", DATASETS, ids=[c[0] for c in DATASETS])
def test_csv_dataset_agrees_with_tensorflow(tf, tmp_path, name, kwargs):
    real = tensorflow_or_skip()
    path = _csv(tmp_path, 'x,y,z\n1,2.5,"q,r"\r\n3,,s\n4,1," multi\nline"\n')

    def rows(lib):
        args = dict(kwargs)
        args["record_defaults"] = [lib.int32 if d == "int32" else d for d in args["record_defaults"]]
        ds = lib.data.experimental.CsvDataset([path, path], **args)
        return ds.element_spec, [tuple(np.asarray(v.numpy()).item() for v in row) for row in ds]

    (got_spec, got), (want_spec, want) = rows(tf), rows(real)
    assert [(s.dtype.name, tuple(s.shape)) for s in got_spec] == [(s.dtype.name, tuple(s.shape)) for s in want_spec]
    assert got == want
    assert isinstance(tf.data.experimental.CsvDataset(path, [[0], [0.0], [""]], header=True), tf.data.Dataset)


def test_csv_dataset_gzip_batch_and_map(tf, tmp_path):
    import gzip

    path = tmp_path / "b.csv.gz"
    path.write_bytes(gzip.compress(b"1,2\n3,4\n5,6\n"))
    ds = tf.data.experimental.CsvDataset(str(path), [0.0, 0.0], compression_type="GZIP")
    sums = [float(x) for x in ds.map(lambda a, b: a + b)]
    assert sums == [3.0, 7.0, 11.0]
    first = next(iter(ds.batch(2)))
    np.testing.assert_array_equal(first[0].numpy(), [1.0, 3.0])


@pytest.mark.parametrize("text,defaults,error", [
    ("1,2,3\n", [[0], [0]], "InvalidArgumentError"),
    ("x\n", [[0]], "InvalidArgumentError"),
    ("1,\n", [[0], "int32"], "InvalidArgumentError"),
    ('1,"open\n', [[0], [""]], "InvalidArgumentError"),
])
def test_csv_dataset_bad_rows(tf, tmp_path, text, defaults, error):
    path = _csv(tmp_path, text)
    ds = tf.data.experimental.CsvDataset(path, [tf.int32 if d == "int32" else d for d in defaults])
    with pytest.raises(Exception) as info:
        list(ds)
    assert type(info.value).__name__ == error


def test_csv_dataset_bad_arguments(tf, tmp_path):
    path = _csv(tmp_path, "1\n")
    with pytest.raises(tf.errors.NotFoundError):
        list(tf.data.experimental.CsvDataset(path + "x", [[0]]))
    with pytest.raises(ValueError, match="select_cols or exclude_cols"):
        tf.data.experimental.CsvDataset(path, [[0]], select_cols=[0], exclude_cols=[1])
    with pytest.raises(ValueError, match="record_defaults"):
        tf.data.experimental.CsvDataset(path, [[0]], select_cols=[0, 1])
