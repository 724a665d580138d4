"""Python subclasses of tf.keras.layers.Layer and tf.keras.Model: eager calls, tracked weights and losses, custom
training loops, and compile/fit/evaluate/predict through the C++ loop (the model wrapped as one layer)."""
import json
import types

import numpy as np
import pytest

from conftest import tensorflow_or_skip


def make_classes(tf):
    class Linear(tf.keras.layers.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(input_shape[-1], self.units), initializer="glorot_uniform",
                                     regularizer=tf.keras.regularizers.L2(1e-3))
            self.b = self.add_weight(name="b", shape=(self.units,), initializer="zeros")

        def call(self, inputs):
            return tf.matmul(inputs, self.w) + self.b

    class Classifier(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.flatten = tf.keras.layers.Flatten()
            self.hidden = tf.keras.layers.Dense(16, activation="relu")
            self.dropout = tf.keras.layers.Dropout(0.1)
            self.out = Linear(3)

        def call(self, x, training=False):
            return self.out(self.dropout(self.hidden(self.flatten(x)), training=training))

    return Linear, Classifier


def data(n=24):
    rng = np.random.default_rng(0)
    return rng.random((n, 4, 4), dtype=np.float32), rng.integers(0, 3, n)


def test_subclassed_layer_and_model_track_weights_and_losses(tf):
    tf.keras.backend.clear_session()
    tf.keras.utils.set_random_seed(0)
    Linear, Classifier = make_classes(tf)
    model = Classifier()
    x, _ = data()
    assert model(x).shape == (24, 3)
    assert [l.name for l in model.layers] == ["flatten", "dense", "dropout", "linear"]
    assert [v.name for v in model.trainable_variables] == ["dense/kernel:0", "dense/bias:0", "linear/w:0",
                                                           "linear/b:0"]
    assert len(model.losses) == 1 and float(model.losses[0]) > 0
    assert model.count_params() == 16 * 16 + 16 + 16 * 3 + 3
    assert model.get_layer("linear") is model.out
    w = model.out.w.numpy()
    np.testing.assert_allclose(float(model.losses[0]), 1e-3 * np.sum(w * w), rtol=1e-5)


def test_a_python_function_as_add_weight_regularizer_and_add_loss(tf):
    class Penalized(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(name="w", shape=(2,), initializer="ones",
                                     regularizer=lambda w: 0.5 * tf.reduce_sum(w))

        def call(self, inputs):
            self.add_loss(tf.reduce_mean(inputs))
            return inputs * self.w

    layer = Penalized()
    layer(np.full((3, 2), 4.0, np.float32))
    assert sorted(float(t) for t in layer.losses) == [1.0, 4.0]
    layer(np.full((3, 2), 2.0, np.float32))  # the call's loss is replaced, not added to
    assert sorted(float(t) for t in layer.losses) == [1.0, 2.0]


def test_custom_training_loop_on_a_subclassed_model(tf):
    tf.keras.utils.set_random_seed(1)
    _, Classifier = make_classes(tf)
    model, optimizer = Classifier(), tf.keras.optimizers.SGD(learning_rate=0.5)
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x, y = data()
    losses = []
    for _ in range(10):
        with tf.GradientTape() as tape:
            loss = loss_object(y, model(x, training=True)) + tf.add_n(model.losses)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        losses.append(float(loss))
    assert losses[-1] < losses[0]


def test_fit_evaluate_predict_and_weights_of_a_subclassed_model(tf, tmp_path):
    tf.keras.utils.set_random_seed(2)
    _, Classifier = make_classes(tf)
    model = Classifier()
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    x, y = data()
    seen = []

    class Epochs(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append((epoch, self.model is model))

    history = model.fit(x, y, batch_size=8, epochs=3, verbose=0, callbacks=[Epochs()])
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert seen == [(0, True), (1, True), (2, True)]
    loss, accuracy = model.evaluate(x, y, verbose=0)
    assert 0 <= accuracy <= 1 and model.predict(x, verbose=0).shape == (24, 3)
    model.save_weights(str(tmp_path / "classifier.weights.h5"))
    other = Classifier()
    other(x)
    other.load_weights(str(tmp_path / "classifier.weights.h5"))
    np.testing.assert_array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))
    with pytest.raises(NotImplementedError, match="save_weights"):
        model.save(str(tmp_path / "classifier.keras"))


def test_subclassed_model_agrees_with_tensorflow(tf):
    real = tensorflow_or_skip()
    ours_cls, theirs_cls = make_classes(tf)[1], make_classes(real)[1]
    ours, theirs = ours_cls(), theirs_cls()
    x, _ = data(5)
    ours(x)
    theirs(x)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours(x).numpy(), np.asarray(theirs(x)), atol=1e-5)


def test_sequential_with_python_layers_runs_and_trains(tf):
    class Double(tf.keras.layers.Layer):
        def call(self, x):
            return x * 2.0

    model = tf.keras.Sequential([tf.keras.Input(shape=(4, 4)), tf.keras.layers.Flatten(), Double(),
                                 tf.keras.layers.Lambda(lambda x, scale: x * scale, arguments={"scale": 0.5}),
                                 tf.keras.layers.Dense(3)])
    assert model.built and [type(l).__name__ for l in model.layers] == ["Flatten", "Double", "Lambda", "Dense"]
    x, y = data()
    plain = tf.keras.Sequential([tf.keras.Input(shape=(4, 4)), tf.keras.layers.Flatten(), tf.keras.layers.Dense(3)])
    plain.set_weights(model.get_weights())
    np.testing.assert_allclose(model(x).numpy(), plain(x).numpy(), rtol=1e-6)
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_add_weight_takes_keras_2_and_keras_3_argument_orders(tf):
    class Both(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.a = self.add_weight((int(input_shape[-1]), 2), initializer="ones", name="a")  # Keras 3
            self.b = self.add_weight("b", shape=(2,), initializer="zeros")  # Keras 2
            self.c = self.add_weight(shape=(2,), name="c", initializer="ones", trainable=False)

        def call(self, x):
            return tf.matmul(x, self.a) + self.b + self.c

    layer = Both()
    np.testing.assert_allclose(layer(np.ones((1, 3), np.float32)).numpy(), [[4.0, 4.0]])
    assert [(v.name, v.trainable) for v in layer.weights] == [("both/a:0", True), ("both/b:0", True),
                                                              ("both/c:0", False)]
    assert len(layer.trainable_variables) == 2


def test_variables_and_layers_held_in_attributes_lists_and_dicts_are_tracked(tf):
    class Scaled(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.scale = tf.Variable(2.0, name="scale")
            self.blocks = {"first": tf.keras.layers.Dense(2), "second": tf.keras.layers.Dense(1)}
            self.extra = [tf.keras.layers.Dense(1)]

        def call(self, x):
            return self.extra[0](self.blocks["second"](self.blocks["first"](x))) * self.scale

    model = Scaled()
    model(np.ones((1, 3), np.float32))
    assert len(model.trainable_variables) == 7 and model.trainable_variables[0].name == "scale:0"
    assert len(model.layers) == 3


def make_functional(tf):
    """A functional model holding a Python layer with weights, a Python layer that adds an activity loss, a layer
    taking two inputs, and a model used as a layer."""
    Linear, _ = make_classes(tf)

    class ActivityPenalty(tf.keras.layers.Layer):
        def call(self, x):
            self.add_loss(1e-2 * tf.reduce_sum(tf.square(x)))
            return x

    class Gate(tf.keras.layers.Layer):
        def call(self, inputs):
            a, b = inputs
            return a * tf.nn.sigmoid(b)

    inputs = tf.keras.Input(shape=(4, 4))
    flat = tf.keras.layers.Flatten()(inputs)
    hidden = ActivityPenalty()(Linear(8)(flat))
    gated = Gate()([hidden, tf.keras.layers.Dense(8)(flat)])
    head = tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(3)])
    return tf.keras.Model(inputs, head(gated))


def test_python_layers_and_models_are_layers_of_a_functional_model(tf, tmp_path):
    tf.keras.utils.set_random_seed(2)
    model = make_functional(tf)
    x, y = data()
    assert model.output_shape == (None, 3)
    assert sorted(type(l).__name__ for l in model.layers) == ["ActivityPenalty", "Dense", "Flatten", "Gate",
                                                              "InputLayer", "Linear", "Sequential"]
    assert sorted(tuple(v.shape) for v in model.trainable_variables) == [(3,), (8,), (8,), (8, 3), (16, 8), (16, 8)]
    model(x)
    assert len(model.losses) == 2  # Linear's L2 penalty and the activity penalty of this call
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = model.get_weights()
    history = model.fit(x, y, epochs=4, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert all(not np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    # The loss fit reports is the data loss plus every penalty.
    plain = float(tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, model(x)))
    evaluated = model.evaluate(x, y, batch_size=len(x), verbose=0)
    np.testing.assert_allclose(evaluated, plain + float(tf.add_n(model.losses)), rtol=1e-5)
    model.save_weights(str(tmp_path / "functional.weights.h5"))
    with pytest.raises(ValueError, match=r"Python subclass \(Linear\).*save_weights"):
        model.save(str(tmp_path / "functional.keras"))


def test_functional_model_with_python_layers_agrees_with_tensorflow(tf):
    real = tensorflow_or_skip()
    ours, theirs = make_functional(tf), make_functional(real)
    assert [type(l).__name__ for l in ours.layers] == [type(l).__name__ for l in theirs.layers]
    theirs.set_weights(ours.get_weights())
    x, _ = data(6)
    np.testing.assert_allclose(ours(x).numpy(), np.asarray(theirs(x)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sorted(float(l) for l in ours.losses), sorted(float(l) for l in theirs.losses),
                               rtol=1e-5)


def make_with_operators(tf):
    inputs = tf.keras.Input(shape=(4, 4))
    scaled = inputs / 255.0
    first, rest = scaled[:, 0], scaled[:, 1:]
    mixed = tf.keras.layers.Flatten()(rest) * 2.0 - 1.0
    hidden = tf.nn.relu(tf.keras.layers.Dense(4)(mixed))
    pooled = tf.reduce_mean(tf.reshape(scaled, [-1, 16]), axis=1, keepdims=True)
    joined = tf.concat([-(hidden + first) ** 2, tf.math.square(pooled)], axis=-1)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(3)(joined))


def test_operators_and_tf_functions_on_symbolic_tensors_become_layers_that_agree_with_tensorflow(tf):
    ours = make_with_operators(tf)
    assert ours.output_shape == (None, 3)
    names = [l.name for l in ours.layers if type(l).__name__ == "TFOpLambda"]
    assert {"tf.nn.relu", "tf.reduce_mean", "tf.reshape", "tf.concat", "tf.math.square"} <= set(names), names
    x, y = data()
    x = x * 255
    ours.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ours.fit(x, y, epochs=1, verbose=0)
    real = tensorflow_or_skip()
    tf_keras = pytest.importorskip("tf_keras", reason="TensorFlow's Keras 2 (tf_keras), whose op layers these are")
    theirs = make_with_operators(types.SimpleNamespace(keras=tf_keras, nn=real.nn, math=real.math, reshape=real.reshape,
                                                       reduce_mean=real.reduce_mean, concat=real.concat))
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours(x).numpy(), np.asarray(theirs(x)), rtol=1e-5, atol=1e-6)


def test_frozen_layers_and_a_frozen_base_model_as_in_transfer_learning(tf):
    """The transfer-learning recipe: a frozen base model called with training=False, a new head trained; then the
    base unfrozen but for its first layer and fine-tuned, its BatchNormalization still in inference mode."""
    rng = np.random.default_rng(3)
    x, y = rng.random((32, 6, 6, 3), dtype=np.float32), rng.integers(0, 2, 32)
    base = tf.keras.Sequential([tf.keras.Input(shape=(6, 6, 3)), tf.keras.layers.Conv2D(4, 3, activation="relu"),
                                tf.keras.layers.BatchNormalization(), tf.keras.layers.GlobalAveragePooling2D()])
    base.trainable = False
    inputs = tf.keras.Input(shape=(6, 6, 3))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(base(inputs, training=False)))
    assert [len(model.trainable_weights), len(model.non_trainable_weights)] == [2, 6]
    loss = tf.keras.losses.BinaryCrossentropy(from_logits=True)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss=loss)
    frozen = base.get_weights()
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    for a, b in zip(frozen, base.get_weights()):
        np.testing.assert_array_equal(a, b)

    base.trainable = True
    base.layers[0].trainable = False
    assert [base.layers[0].trainable, base.layers[1].trainable] == [False, True]
    assert len(model.trainable_weights) == 4  # BatchNormalization's gamma and beta, the head's kernel and bias
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss=loss)
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    tuned = base.get_weights()  # conv kernel, bias; gamma, beta, moving mean, moving variance
    for i in (0, 1, 4, 5):  # the frozen conv, and the moving statistics (inference mode: never updated)
        np.testing.assert_array_equal(tuned[i], frozen[i])
    assert not np.array_equal(tuned[2], frozen[2])


def test_trainable_false_in_constructors_and_python_layers(tf):
    Linear, _ = make_classes(tf)
    dense = tf.keras.layers.Dense(3, trainable=False)
    dense.build((None, 2))
    assert not dense.trainable and dense.trainable_weights == [] and len(dense.non_trainable_weights) == 2
    linear = Linear(2, trainable=False)
    linear(np.ones((1, 3), np.float32))
    assert linear.trainable_weights == [] and len(linear.non_trainable_weights) == 2
    model = tf.keras.Sequential([tf.keras.Input(shape=(2,)), tf.keras.layers.Dense(2)], trainable=False)
    assert model.trainable_weights == [] and not model.layers[0].trainable
    assert json.loads(model.to_json())["config"]["layers"][1]["config"]["trainable"] is False
