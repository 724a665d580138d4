"""fit/evaluate arguments (validation_split, sample and class weights, steps), Python losses and callbacks, and the
optimizer's custom-loop methods."""
import csv

import numpy as np
import pytest

from conftest import tensorflow_or_skip


def small(tf, loss="sparse_categorical_crossentropy", metrics=("accuracy",)):
    tf.keras.utils.set_random_seed(7)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), tf.keras.layers.Dense(8, activation="relu"),
                                 tf.keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=loss, metrics=list(metrics))
    return model


def data(n=40):
    rng = np.random.default_rng(1)
    return rng.random((n, 4), dtype=np.float32), rng.integers(0, 3, n)


def test_validation_split_keeps_the_last_fraction(tf):
    x, y = data()
    model = small(tf)
    history = model.fit(x, y, validation_split=0.25, epochs=1, verbose=0, shuffle=False)
    expected = small(tf).evaluate(x[30:], y[30:], verbose=0, return_dict=True)
    # The validation logs are those of the model after its epoch; only the split is compared here.
    assert "val_loss" in history.history
    trained = model.evaluate(x[30:], y[30:], verbose=0, return_dict=True)
    assert history.history["val_loss"][0] == pytest.approx(trained["loss"], rel=1e-6)
    assert expected["loss"] != trained["loss"]


def test_sample_and_class_weights_weight_the_loss(tf):
    x, y = data(8)
    model = small(tf)
    plain = model.evaluate(x, y, verbose=0)[0]
    zero = model.evaluate(x, y, sample_weight=np.zeros(8, np.float32), verbose=0)[0]
    assert zero == 0 and plain > 0
    weights = {0: 1.0, 1: 1.0, 2: 1.0}
    a = small(tf).fit(x, y, epochs=2, verbose=0, shuffle=False, class_weight=weights).history["loss"]
    b = small(tf).fit(x, y, epochs=2, verbose=0, shuffle=False).history["loss"]
    np.testing.assert_allclose(a, b, rtol=1e-6)
    c = small(tf).fit(x, y, epochs=2, verbose=0, shuffle=False, sample_weight=np.full(8, 2.0)).history["loss"]
    assert c[0] == pytest.approx(2 * b[0], rel=1e-5)


def test_evaluate_without_metrics_is_a_number_and_train_on_batch_dict(tf):
    x, y = data(8)
    model = small(tf, metrics=())
    assert isinstance(model.evaluate(x, y, verbose=0), float)
    logs = small(tf).train_on_batch(x, y, return_dict=True)
    assert sorted(logs) == ["accuracy", "loss"]


def test_steps_per_epoch_with_arrays_and_initial_epoch(tf):
    x, y = data(40)
    history = small(tf).fit(x, y, batch_size=10, epochs=3, initial_epoch=1, verbose=0)
    assert history.epoch == [1, 2]


def test_python_loss_subclass(tf):
    class Scaled(tf.keras.losses.Loss):
        def call(self, y_true, y_pred):
            return tf.reduce_mean(tf.square(y_pred - y_true), axis=-1) * 2.0

    loss = Scaled(reduction="sum")
    assert loss.name == "scaled"
    y_true, y_pred = np.zeros((2, 3), np.float32), np.ones((2, 3), np.float32)
    assert float(loss(y_true, y_pred)) == pytest.approx(4.0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(4,))])
    model.compile(optimizer="sgd", loss=Scaled())
    model.fit(np.ones((4, 4), np.float32), np.zeros((4, 3), np.float32), verbose=0)


def test_lambda_callback_and_csv_logger(tf, tmp_path):
    x, y = data(20)
    ends = []
    path = tmp_path / "log.csv"
    small(tf).fit(x, y, epochs=2, verbose=0, callbacks=[
        tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: ends.append((epoch, round(logs["loss"], 3)))),
        tf.keras.callbacks.CSVLogger(str(path))])
    assert [e for e, _ in ends] == [0, 1]
    rows = list(csv.DictReader(path.open()))
    assert [r["epoch"] for r in rows] == ["0", "1"] and set(rows[0]) == {"epoch", "accuracy", "loss"}


def test_terminate_on_nan(tf):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(1,))])
    model.compile(optimizer=tf.keras.optimizers.SGD(1e30), loss="mse")
    history = model.fit(np.full((8, 1), 1e10, np.float32), np.zeros((8, 1), np.float32), batch_size=1, epochs=3,
                        verbose=0, callbacks=[tf.keras.callbacks.TerminateOnNaN()])
    assert len(history.epoch) <= 1


@pytest.mark.parametrize("nan_in", ["weights", "data"])
def test_terminate_on_nan_sees_a_nan_through_relu(tf, nan_in):
    # relu(NaN) is NaN, as in TensorFlow: a NaN weight or feature before a relu makes the loss NaN, and fit stops on
    # the batch it reaches (relu once made it 0, and training went on with a finite loss).
    x, y = data(16)
    if nan_in == "data":
        x[5, 1] = np.nan  # in the second batch of 4
    model = small(tf, metrics=())
    if nan_in == "weights":
        weights = [w.copy() for w in model.get_weights()]
        weights[0][0, 3] = np.nan  # the relu layer's kernel
        model.set_weights(weights)
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                        callbacks=[tf.keras.callbacks.TerminateOnNaN()])
    assert history.epoch == [0]
    assert np.isnan(history.history["loss"][0])
    assert int(model.optimizer.iterations.numpy()) == (1 if nan_in == "weights" else 2)
    assert np.isnan(model.predict(x[:1], verbose=0)).all()


def test_optimizer_minimize_and_schedules_in_the_loop(tf):
    var = tf.Variable(3.0)
    opt = tf.keras.optimizers.SGD(learning_rate=tf.keras.optimizers.schedules.PiecewiseConstantDecay([1], [0.5, 0.1]))
    opt.minimize(lambda: var * var, [var])
    assert float(var) == pytest.approx(0.0)
    opt.minimize(lambda: (var - 1.0) * (var - 1.0), [var])
    assert float(var) == pytest.approx(1.0)
    assert opt.iterations.numpy() == 2 and float(opt.learning_rate) == pytest.approx(0.1)


def test_multi_input_functional_model_called_with_a_list(tf):
    a, b = tf.keras.Input(shape=(2,)), tf.keras.Input(shape=(3,))
    out = tf.keras.layers.Dense(1, kernel_initializer="ones")(tf.keras.layers.Concatenate()([a, b]))
    model = tf.keras.Model(inputs=[a, b], outputs=out)
    y = model([np.ones((2, 2), np.float32), np.ones((2, 3), np.float32)])
    np.testing.assert_allclose(y.numpy(), [[5.0], [5.0]])
    assert model.input_shape == [(None, 2), (None, 3)]


def test_adam_training_agrees_with_tensorflow(tf):
    real = tensorflow_or_skip()
    x, y = data(16)
    ours = small(tf)
    theirs = real.keras.Sequential([real.keras.Input(shape=(4,)), real.keras.layers.Dense(8, activation="relu"),
                                    real.keras.layers.Dense(3, activation="softmax")])
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    theirs.compile(optimizer=real.keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    a = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    b = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(a, b, rtol=1e-4)
    for u, v in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(u, v, atol=1e-5)


def test_one_dimensional_float64_data_fits_a_one_feature_model(tf):
    # TensorFlow's first tutorial: xs of shape (6,) in float64 for Dense(units=1, input_shape=[1]).
    xs = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 4.0])
    ys = 2 * xs - 1
    model = tf.keras.Sequential([tf.keras.layers.Dense(units=1, input_shape=[1])])
    model.compile(optimizer="sgd", loss="mean_squared_error")
    model.fit(xs, ys, epochs=200, verbose=0)
    assert model.predict(np.array([10.0]), verbose=0)[0, 0] == pytest.approx(19.0, abs=0.5)


def test_progress_bar_and_prints_keep_their_order(tf, tmp_path):
    import subprocess
    import sys

    script = tmp_path / "order.py"
    script.write_text(
        "import numpy as np\nimport lockstep as tf\n"
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])\n"
        "model.compile(optimizer='sgd', loss='mse')\n"
        "class Say(tf.keras.callbacks.Callback):\n"
        "    def on_epoch_end(self, epoch, logs=None):\n        print('callback', epoch)\n"
        "print('before')\n"
        "model.fit(np.ones((4, 2)), np.ones(4), epochs=2, verbose=1, callbacks=[Say()])\n"
        "print('after')\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True).stdout
    lines = [l.split()[0] for l in out.splitlines() if l.strip()]
    assert lines[0] == "before" and lines[-1] == "after"
    assert lines.index("Epoch") < lines.index("callback") < len(lines) - 1


def test_float64_inputs_are_cast_to_the_models_dtype(tf):
    x, _ = data(4)
    sequential = small(tf)
    inputs = tf.keras.Input(shape=(4,))
    functional = tf.keras.Model(inputs, tf.keras.layers.Dense(2)(inputs))
    for model in (sequential, functional):
        wide = tf.constant(x.astype(np.float64))  # as a float64 tensor, which the C++ model itself casts
        np.testing.assert_array_equal(model(wide).numpy(), model(x).numpy())


def test_reduce_lr_on_plateau(tf):
    x, y = data(16)
    model = small(tf)
    rates = []

    class Rate(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            rates.append(round(float(self.model.optimizer.learning_rate), 6))

    plateau = tf.keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_delta=100.0)
    model.fit(x, y, epochs=3, verbose=0, callbacks=[plateau, Rate()])
    assert rates == [0.1, 0.05, 0.025]  # the first epoch sets the best value, as in Keras


def test_a_learning_rate_schedule_written_in_python(tf):
    class Warmup(tf.keras.optimizers.schedules.LearningRateSchedule):
        def __init__(self, peak):
            super().__init__()
            self.peak = peak

        def __call__(self, step):
            return self.peak * tf.minimum(1.0, tf.cast(step + 1, tf.float32) / 4.0)

        def get_config(self):
            return {"peak": self.peak}

    opt = tf.keras.optimizers.SGD(learning_rate=Warmup(0.4))
    var = tf.Variable(1.0)
    seen = []
    for _ in range(5):
        seen.append(round(float(opt.learning_rate), 6))
        opt.apply_gradients([(tf.constant(1.0), var)])
    assert seen == [0.1, 0.2, 0.3, 0.4, 0.4]
    assert float(var) == pytest.approx(1.0 - sum(seen))
    assert float(tf.keras.optimizers.Adam(learning_rate=lambda: 0.25).learning_rate) == 0.25
    model = small(tf)
    model.compile(optimizer=tf.keras.optimizers.Adam(Warmup(0.01)), loss="sparse_categorical_crossentropy")
    model.fit(*data(8), epochs=1, verbose=0)


def test_a_metric_written_in_python_runs_in_a_custom_loop(tf):
    class TruePositives(tf.keras.metrics.Metric):
        def __init__(self, name="true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.count = self.add_weight(name="count", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            hits = tf.logical_and(tf.equal(tf.cast(y_true, tf.bool), True), tf.greater(y_pred, 0.5))
            self.count.assign_add(tf.reduce_sum(tf.cast(hits, tf.float32)))

        def result(self):
            return self.count

    metric = TruePositives()
    metric.update_state(np.array([1, 0, 1]), np.array([0.9, 0.9, 0.1], np.float32))
    assert float(metric(np.array([1]), np.array([0.8], np.float32))) == 2.0
    metric.reset_state()
    assert float(metric.result()) == 0.0 and metric.name == "true_positives"
    with pytest.raises(NotImplementedError, match="custom loop"):
        small(tf).compile(optimizer="sgd", loss="mse", metrics=[TruePositives()])


# ---- empty, mismatched and non-numeric input: refused before any step, naming the input ----


def test_empty_data_is_refused_naming_it(tf):
    x, y = data(8)
    model = small(tf)
    empty = tf.data.Dataset.from_tensor_slices((x[:0], y[:0])).batch(4)
    filtered = tf.data.Dataset.from_tensor_slices((x, y)).filter(lambda a, b: False).batch(4)  # cardinality unknown
    for ds in (empty, filtered):
        with pytest.raises(ValueError, match=r"the dataset passed to fit\(\) is empty"):
            model.fit(ds, epochs=2, verbose=0)
        with pytest.raises(ValueError, match="is empty"):
            model.evaluate(ds, verbose=0)
        with pytest.raises(ValueError, match=r"the dataset passed to predict\(\) is empty"):
            model.predict(ds, verbose=0)
    # Arrays: the empty one by name, not a shuffle the user never asked for.
    for weights in (None, np.ones(0)):
        with pytest.raises(ValueError, match=r"^fit\(\) got no data: x is empty \(shape \(0, 4\)\)"):
            model.fit(x[:0], y[:0], sample_weight=weights, verbose=0)
    with pytest.raises(ValueError, match=r"evaluate\(\) got no data: x is empty"):
        model.evaluate(x[:0], y[:0], verbose=0)
    with pytest.raises(ValueError, match=r"predict\(\) got no data: x is empty"):
        model.predict(x[:0], verbose=0)
    with pytest.raises(ValueError, match="validation_data's x is empty"):
        model.fit(x, y, validation_data=(x[:0], y[:0]), verbose=0)
    with pytest.raises(ValueError, match=r"fit\(\)'s validation_data is empty"):
        model.fit(x, y, validation_data=empty, verbose=0)
    assert int(model.optimizer.iterations) == 0


def test_mismatched_and_non_numeric_arrays_are_one_line(tf):
    x, y = data(8)
    model = small(tf)
    with pytest.raises(ValueError, match=r"fit\(\): x has 8 samples but y has 5 \(shapes \(8, 4\) and \(5,\)\)"):
        model.fit(x, y[:5], verbose=0)
    with pytest.raises(ValueError, match="x has 8 samples but sample_weight has 3"):
        model.fit(x, y, sample_weight=np.ones(3), verbose=0)
    with pytest.raises(ValueError, match=r"evaluate\(\): x has 8 samples but y has 5"):
        model.evaluate(x, y[:5], verbose=0)
    with pytest.raises(ValueError, match="validation_data's x has 8 samples but validation_data's y has 2"):
        model.fit(x, y, validation_data=(x, y[:2]), verbose=0)
    for bad in (np.array([["a", "b", "c", "d"]] * 8), np.array([[1, 2, None, 4]] * 8, dtype=object)):
        with pytest.raises(ValueError) as e:
            model.fit(bad, y, verbose=0)
        assert "\n" not in str(e.value) and f"dtype {bad.dtype} and shape (8, 4)" in str(e.value)
    with pytest.raises(ValueError, match=r"predict\(\): x is an array of dtype <U1"):
        model.predict([["a", "b", "c", "d"]], verbose=0)
    for batch_size in (0, -2):
        with pytest.raises(ValueError, match=f"batch_size must be >= 1, got {batch_size}"):
            model.fit(x, y, batch_size=batch_size, verbose=0)
        with pytest.raises(ValueError, match=f"batch_size must be >= 1, got {batch_size}"):
            model.evaluate(x, y, batch_size=batch_size, verbose=0)
    assert int(model.optimizer.iterations) == 0


def test_a_validation_split_leaving_no_training_data_says_what_keras_says(tf):
    keras = tensorflow_or_skip().keras
    for n, split in ((3, 0.99), (1, 0.5)):
        x, y = data(n)
        with pytest.raises(ValueError) as ours:
            small(tf).fit(x, y, validation_split=split, verbose=0)
        theirs = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
        theirs.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        with pytest.raises(ValueError) as expected:
            theirs.fit(x, y, validation_split=split, verbose=0)
        assert str(ours.value) == str(expected.value)
