"""Every layer lockstep has, made from Keras' arguments, against TensorFlow's Keras: the same weights give the same
outputs, and each layer's config round-trips."""
import numpy as np
import pytest

from conftest import tensorflow_or_skip

# (class, positional args, keyword args, input shape with batch, called in training mode)
CASES = [
    ("Dense", (5,), {"activation": "relu"}, (3, 4), False),
    ("Dense", (), {"units": 2, "use_bias": False, "kernel_initializer": "he_normal"}, (3, 2, 4), False),
    ("Conv2D", (3, (3, 3)), {"strides": 2, "padding": "same", "activation": "tanh"}, (2, 7, 7, 2), False),
    ("MaxPooling2D", (), {"pool_size": 3, "strides": 2, "padding": "same"}, (2, 7, 7, 2), False),
    ("AveragePooling2D", (2,), {}, (2, 6, 6, 3), False),
    ("GlobalAveragePooling2D", (), {"keepdims": True}, (2, 5, 5, 3), False),
    ("GlobalMaxPooling2D", (), {}, (2, 5, 5, 3), False),
    ("MaxPooling1D", (), {"pool_size": 3, "strides": 2, "padding": "same"}, (2, 7, 3), False),
    ("AveragePooling1D", (2,), {}, (2, 6, 3), False),
    ("GlobalAveragePooling1D", (), {"keepdims": True}, (2, 5, 3), False),
    ("GlobalMaxPooling1D", (), {}, (2, 5, 3), False),
    ("Flatten", (), {}, (2, 3, 4), False),
    ("Reshape", ((4, 3),), {}, (2, 12), False),
    ("Dropout", (0.5,), {}, (2, 8), False),
    ("BatchNormalization", (), {"momentum": 0.9, "epsilon": 1e-3}, (4, 6), True),
    ("LayerNormalization", (), {"epsilon": 1e-5}, (3, 6), False),
    ("Activation", ("softmax",), {}, (2, 5), False),
    ("Rescaling", (1 / 255,), {"offset": -0.5}, (2, 3), False),
    ("UpSampling2D", (2,), {"interpolation": "bilinear"}, (1, 3, 3, 2), False),
    ("Softmax", (), {}, (2, 5), False),
    ("ReLU", (), {}, (2, 5), False),
    ("LeakyReLU", (), {"negative_slope": 0.2}, (2, 5), False),
]


@pytest.mark.parametrize("name,args,kwargs,shape,training", CASES, ids=[c[0] for c in CASES])
def test_layer_agrees_with_tensorflow(tf, name, args, kwargs, shape, training):
    real = tensorflow_or_skip()
    ours, theirs = getattr(tf.keras.layers, name)(*args, **kwargs), getattr(real.keras.layers, name)(*args, **kwargs)
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    ours_out = ours(x, training=training)
    theirs(x)  # builds it
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours_out.numpy(), np.asarray(theirs(x, training=training)), atol=1e-5)
    assert ours.get_config()["name"] == ours.name
    again = type(ours).from_config(ours.get_config())
    assert again.get_config()["name"] == ours.name and again.count_params() == 0


def test_embedding_add_and_concatenate_agree_with_tensorflow(tf):
    real = tensorflow_or_skip()
    ids = np.array([[1, 2, 0], [3, 3, 1]])
    ours, theirs = tf.keras.layers.Embedding(4, 2), real.keras.layers.Embedding(4, 2)
    ours_out = ours(ids)
    theirs(ids)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours_out.numpy(), np.asarray(theirs(ids)), atol=1e-6)
    a, b = np.ones((2, 3), np.float32), np.full((2, 3), 2.0, np.float32)
    np.testing.assert_allclose(tf.keras.layers.Add()([a, b]).numpy(), np.asarray(real.keras.layers.Add()([a, b])))
    np.testing.assert_allclose(tf.keras.layers.Concatenate(axis=1)([a, b]).numpy(),
                               np.asarray(real.keras.layers.Concatenate(axis=1)([a, b])))


def test_dense_regularizer_and_initializer_objects_reach_the_config(tf):
    layer = tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.RandomNormal(stddev=0.1, seed=3),
                                  kernel_regularizer=tf.keras.regularizers.L1L2(l1=0.1, l2=0.2))
    layer.build((None, 3))
    config = layer.get_config()
    assert config["kernel_initializer"]["class_name"] == "RandomNormal"
    assert config["kernel_initializer"]["config"]["seed"] == 3
    assert config["kernel_regularizer"]["class_name"] == "L1L2"
    assert len(layer.losses) == 1


def test_layer_names_and_shapes(tf):
    tf.keras.backend.clear_session()
    assert [tf.keras.layers.Dense(1).name, tf.keras.layers.Dense(1).name] == ["dense", "dense_1"]
    assert tf.keras.layers.Conv2D(4, 3, name="first").name == "first"
    conv = tf.keras.layers.Conv2D(4, 3)
    assert conv.compute_output_shape((None, 8, 8, 1)) == (None, 6, 6, 4)
    assert tf.keras.layers.MaxPool2D is tf.keras.layers.MaxPooling2D


def test_normalization_adapts_and_agrees_with_tensorflow_also_through_a_keras_file(tf, tmp_path):
    real = tensorflow_or_skip()
    rng = np.random.default_rng(5)
    x = (rng.random((64, 3)) * [1, 10, 100] + [0, -5, 50]).astype(np.float32)
    ours, theirs = tf.keras.layers.Normalization(), real.keras.layers.Normalization()
    ours.adapt(x)
    theirs.adapt(x)
    np.testing.assert_allclose(ours.get_weights()[0], np.asarray(theirs.mean).ravel(), rtol=1e-5)
    np.testing.assert_allclose(ours.get_weights()[1], np.asarray(theirs.variance).ravel(), rtol=1e-4)
    np.testing.assert_allclose(ours(x).numpy(), np.asarray(theirs(x)), rtol=1e-4, atol=1e-5)
    ours.adapt(tf.data.Dataset.from_tensor_slices(x).batch(10))  # a Dataset of batches gives the same statistics
    np.testing.assert_allclose(ours(x).numpy(), np.asarray(theirs(x)), rtol=1e-4, atol=1e-5)
    given = tf.keras.layers.Normalization(mean=3.0, variance=4.0, invert=True)
    np.testing.assert_allclose(given(np.array([[0.0], [1.0]], np.float32)).numpy().ravel(), [3.0, 5.0])
    with pytest.raises(ValueError, match="axis"):
        tf.keras.layers.Normalization(axis=None)
    # A regression model with it and the MAE loss, saved by lockstep and loaded by Keras 3.
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)), ours, tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mean_absolute_error")
    y = x @ np.array([1.0, 0.1, 0.01], np.float32)
    history = model.fit(x, y, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    model.save(str(tmp_path / "regression.keras"))
    back = real.keras.models.load_model(str(tmp_path / "regression.keras"))
    np.testing.assert_allclose(np.asarray(back.predict(x, verbose=0)), model.predict(x, verbose=0), rtol=1e-4,
                               atol=1e-5)
    # And the other way: Keras 3's uncompiled model (its compile_config is {}) with an adapted Normalization.
    keras_norm = real.keras.layers.Normalization()
    keras_norm.adapt(x)
    keras_model = real.keras.Sequential([real.keras.Input(shape=(3,)), keras_norm, real.keras.layers.Dense(2)])
    keras_model.save(str(tmp_path / "keras.keras"))
    mine = tf.keras.models.load_model(str(tmp_path / "keras.keras"))
    np.testing.assert_allclose(mine.predict(x, verbose=0), np.asarray(keras_model.predict(x, verbose=0)), rtol=1e-4,
                               atol=1e-5)
    np.testing.assert_allclose(float(tf.keras.losses.MeanAbsoluteError()(y[:, None], model(x))),
                               float(real.keras.losses.MeanAbsoluteError()(y[:, None], np.asarray(model(x)))),
                               rtol=1e-5)


def test_a_mask_is_refused_rather_than_ignored():
    import lockstep as tf

    x = np.ones((2, 4, 3), np.float32)
    with pytest.raises(NotImplementedError, match="mask= is not implemented"):
        tf.keras.layers.GlobalAveragePooling1D()(x, mask=np.array([[True] * 4] * 2))
    assert tf.keras.layers.GlobalAveragePooling1D()(x, mask=None).shape == (2, 3)


def test_a_window_of_another_rank_is_refused_as_keras_refuses_it():
    import lockstep as tf

    with pytest.raises(ValueError, match=r"pool_size=\[2,2\] must be an integer or a list of 1 integer"):
        tf.keras.layers.MaxPooling1D(pool_size=[2, 2])
    with pytest.raises(ValueError, match=r"strides=\[1\] must be an integer or a list of 2 integers"):
        tf.keras.layers.MaxPooling2D(strides=[1])
    assert tf.keras.layers.AveragePooling1D(pool_size=[3]).get_config()["pool_size"] in (3, [3], (3,))


def test_a_functional_model_records_build_configs_where_keras_does(tf):
    """Keras writes a layer's build_config only for layers that build something: none for the poolings."""
    import json

    real = tensorflow_or_skip()

    def layers_with_build_config(k):
        i = k.Input((8, 3))
        x = k.layers.AveragePooling1D(2)(k.layers.MaxPooling1D()(i))
        o = k.layers.Concatenate()([k.layers.GlobalAveragePooling1D()(x), k.layers.GlobalMaxPooling1D()(x)])
        model = k.Model(i, k.layers.Dense(2)(o))
        return {l["class_name"]: "build_config" in l for l in json.loads(model.to_json())["config"]["layers"]}

    assert layers_with_build_config(tf.keras) == layers_with_build_config(real.keras)
