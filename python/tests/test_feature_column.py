"""tf.feature_column and tf.keras.layers.DenseFeatures: ids (hashed, vocabulary, crossed, bucketized) and dense
outputs against TensorFlow 2.21 with tf_keras' DenseFeatures, embeddings by hand, and bad input."""
import numpy as np
import pytest
from conftest import tensorflow_or_skip


def _features(lib):
    return {"a": lib.constant(["x", "y", "", "qq"]),
            "b": lib.constant(np.array([[1, 2], [3, -1], [5, 6], [7, 8]], np.int64)),
            "n": lib.constant([1.0, 2.5, 7.0, -3.0]),
            "m": lib.constant(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], np.float32))}


def _columns(lib):
    """Lists of columns, each with distinct names (DenseFeatures refuses a name twice)."""
    fc = lib.feature_column
    vocab = fc.categorical_column_with_vocabulary_list("a", ["x", "z"], num_oov_buckets=3)
    bucket = fc.bucketized_column(fc.numeric_column("n"), [0.0, 2.0, 5.0])
    return [[fc.numeric_column("n", normalizer_fn=lambda t: t * 2.0),
            fc.numeric_column("m", shape=(2,)),
            fc.indicator_column(fc.categorical_column_with_hash_bucket("a", 17)),
            fc.indicator_column(fc.categorical_column_with_hash_bucket("b", 11, dtype=lib.int64)),
            bucket,
            fc.indicator_column(fc.crossed_column(["a", "b"], 100)),
            fc.indicator_column(fc.crossed_column([vocab, bucket], 37, hash_key=12345)),
            fc.indicator_column(fc.crossed_column([fc.crossed_column(["a", bucket], 1000), "b"], 53))], [
            fc.indicator_column(vocab),
            fc.indicator_column(fc.categorical_column_with_vocabulary_list("b", [2, 3, 5], default_value=-1)),
            fc.numeric_column("n", shape=1)], [
            fc.indicator_column(fc.categorical_column_with_identity("b", 10, default_value=0))]]


def _dense_features(tf, real):
    import tf_keras

    for ours, theirs in zip(_columns(tf), _columns(real)):
        yield (tf.keras.layers.DenseFeatures(ours)(_features(tf)).numpy(),
               tf_keras.layers.DenseFeatures(theirs)(_features(real)).numpy())


def test_dense_features_match_tensorflow(tf):
    real = tensorflow_or_skip()
    pytest.importorskip("tf_keras")
    for ours, theirs in _dense_features(tf, real):
        assert ours.shape == theirs.shape
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_column_attributes_match_tensorflow(tf):
    real = tensorflow_or_skip()
    for ours, theirs in zip(sum(_columns(tf), []), sum(_columns(real), [])):
        assert ours.name == theirs.name
        assert tuple(ours.variable_shape) == tuple(theirs.variable_shape)
        assert set(ours.parse_example_spec) == set(theirs.parse_example_spec)
        for key, spec in theirs.parse_example_spec.items():
            assert type(ours.parse_example_spec[key]).__name__ == type(spec).__name__
            assert ours.parse_example_spec[key].dtype.name == spec.dtype.name


def test_make_parse_example_spec(tf):
    real = tensorflow_or_skip()

    def spec(fc):
        return fc.make_parse_example_spec([fc.numeric_column("q", shape=(2,), default_value=0),
                                           fc.embedding_column(fc.categorical_column_with_identity("i", 4), 2),
                                           fc.indicator_column(fc.crossed_column(["s", "t"], 5))])
    ours, theirs = spec(tf.feature_column), spec(real.feature_column)
    assert sorted(ours) == sorted(theirs)
    assert ours["q"].shape == theirs["q"].shape and ours["q"].default_value == theirs["q"].default_value
    assert [ours[k].dtype.name for k in sorted(ours)] == [theirs[k].dtype.name for k in sorted(theirs)]


def test_vocabulary_file(tf, tmp_path):
    real = tensorflow_or_skip()
    pytest.importorskip("tf_keras")
    import tf_keras

    path = tmp_path / "vocab.txt"
    path.write_text("x\ny\nzz\n")

    def run(lib, layers):
        fc = lib.feature_column
        cols = [fc.indicator_column(fc.categorical_column_with_vocabulary_file("a", str(path), num_oov_buckets=2)),
                fc.embedding_column(fc.categorical_column_with_vocabulary_file("a", str(path), 2), 2,
                                    initializer=lambda shape, dtype: np.ones(shape, np.float32))]
        return layers.DenseFeatures(cols)({"a": lib.constant([["x", "zz"], ["w", ""], ["y", "y"]])}).numpy()
    np.testing.assert_array_equal(run(tf, tf.keras.layers), run(real, tf_keras.layers))


def test_embedding_by_hand(tf):
    fc = tf.feature_column
    ids = fc.categorical_column_with_identity("i", 5)
    cols = [fc.embedding_column(ids, 3, combiner=c, initializer=lambda shape, dtype: np.arange(
        15, dtype=np.float32).reshape(shape)) for c in ("mean", "sum", "sqrtn")]
    layer = tf.keras.layers.DenseFeatures(cols[0])
    feats = {"i": tf.constant(np.array([[1, 4], [2, -1], [-1, -1]], np.int64))}
    table = np.arange(15, dtype=np.float32).reshape(5, 3)
    np.testing.assert_allclose(layer(feats).numpy(), [(table[1] + table[4]) / 2, table[2], [0, 0, 0]])
    for col, scale in zip(cols[1:], (1.0, 1 / np.sqrt(2))):
        out = tf.keras.layers.DenseFeatures([col])(feats).numpy()
        np.testing.assert_allclose(out[0], (table[1] + table[4]) * scale, rtol=1e-6)
    assert [w.shape for w in layer.trainable_weights] == [(5, 3)]


def test_embedding_is_trained(tf):
    fc = tf.feature_column
    layer = tf.keras.layers.DenseFeatures([fc.embedding_column(fc.categorical_column_with_vocabulary_list(
        "a", ["x", "y"]), 2), fc.numeric_column("n")])
    feats = {"a": tf.constant(["x", "y", "x"]), "n": tf.constant([1.0, 2.0, 3.0])}
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(layer(feats))
    (grad,) = tape.gradient(loss, layer.trainable_weights)
    np.testing.assert_allclose(tf.convert_to_tensor(grad).numpy(), [[2, 2], [1, 1]])


def test_in_sequential_model_and_dataset_map(tf):
    fc = tf.feature_column
    cols = [fc.numeric_column("n"), fc.indicator_column(fc.categorical_column_with_vocabulary_list("a", ["x", "y"]))]
    features = tf.keras.layers.DenseFeatures(cols)
    model = tf.keras.Sequential([features, tf.keras.layers.Dense(1)])
    out = model({"n": tf.constant([1.0, 2.0]), "a": tf.constant(["y", "x"])})
    assert tuple(out.shape) == (2, 1)
    data = {"n": np.array([1.0, 2.0, 3.0], np.float32), "a": np.array(["x", "y", "z"])}
    ds = tf.data.Dataset.from_tensor_slices(data).batch(3)
    batch = next(iter(ds))
    np.testing.assert_array_equal(features(batch).numpy(), [[1, 0, 1], [0, 1, 2], [0, 0, 3]])  # a_indicator sorts first


def test_bad_input(tf):
    fc = tf.feature_column
    with pytest.raises(ValueError):
        fc.numeric_column("n", shape=(0,))
    with pytest.raises(ValueError):
        fc.numeric_column("n", dtype="string")
    with pytest.raises(TypeError):
        fc.numeric_column("n", normalizer_fn=3)
    with pytest.raises(ValueError):
        fc.bucketized_column(fc.numeric_column("n"), [3.0, 1.0])
    with pytest.raises(ValueError):
        fc.bucketized_column(fc.categorical_column_with_identity("i", 3), [1.0])
    with pytest.raises(ValueError):
        fc.categorical_column_with_hash_bucket("a", 0)
    with pytest.raises(ValueError):
        fc.categorical_column_with_vocabulary_list("a", ["x", "x"])
    with pytest.raises(ValueError):
        fc.categorical_column_with_vocabulary_list("a", ["x"], default_value=0, num_oov_buckets=2)
    with pytest.raises(ValueError):
        fc.crossed_column(["a"], 10)
    with pytest.raises(ValueError):
        fc.crossed_column([fc.categorical_column_with_hash_bucket("a", 5), "b"], 10)
    with pytest.raises(ValueError):
        fc.embedding_column(fc.categorical_column_with_identity("i", 3), 2, combiner="max")
    with pytest.raises(ValueError):
        fc.indicator_column(fc.numeric_column("n"))
    with pytest.raises(ValueError):
        fc.categorical_column_with_vocabulary_file("a", "/nonexistent/vocab.txt")
    with pytest.raises(NotImplementedError):
        fc.embedding_column(fc.categorical_column_with_identity("i", 3), 2, max_norm=1.0)
    with pytest.raises(ValueError):  # a categorical column must be wrapped
        tf.keras.layers.DenseFeatures([fc.categorical_column_with_identity("i", 3)])
    with pytest.raises(ValueError):
        tf.keras.layers.DenseFeatures([])
    layer = tf.keras.layers.DenseFeatures([fc.numeric_column("n")])
    with pytest.raises(ValueError):  # missing key
        layer({"other": tf.constant([1.0])})
    with pytest.raises(ValueError):  # rank 0
        layer({"n": tf.constant(1.0)})
    with pytest.raises(ValueError):  # strings into a numeric column
        layer({"n": tf.constant(["1"])})
    ind = tf.keras.layers.DenseFeatures([fc.indicator_column(fc.categorical_column_with_identity("i", 3))])
    with pytest.raises(tf.errors.InvalidArgumentError):  # id out of range, no default_value
        ind({"i": tf.constant(np.array([0, 5], np.int64))})
    vocab = tf.keras.layers.DenseFeatures([fc.indicator_column(fc.categorical_column_with_vocabulary_list(
        "a", ["x"]))])
    with pytest.raises(ValueError):  # integers into a string column
        vocab({"a": tf.constant(np.array([1, 2], np.int64))})
