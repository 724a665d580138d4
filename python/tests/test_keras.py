"""tf.keras from Python: models, layers, compile/fit/evaluate/predict, losses, metrics, optimizers, callbacks, saving
and the data sets, against TensorFlow's Keras where the venv has it, and bad input giving one-line Python errors."""
import os

import numpy as np
import pytest

from conftest import tensorflow_or_skip

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def cnn(api, filters=4):
    """The tutorials' CNN, smaller, in `api` (lockstep or tensorflow)."""
    return api.keras.Sequential([
        api.keras.Input(shape=(28, 28)),
        api.keras.layers.Reshape(target_shape=(28, 28, 1)),
        api.keras.layers.Conv2D(filters, 3, activation="relu"),
        api.keras.layers.MaxPooling2D(),
        api.keras.layers.Flatten(),
        api.keras.layers.Dense(16, activation="relu"),
        api.keras.layers.Dense(10),
    ])


def data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, 28, 28), dtype=np.float32), rng.integers(0, 10, n).astype(np.int64)


def compile_cnn(tf, model, lr=0.01):
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=lr),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


# ---- models and training ----

def test_sequential_fit_returns_history_and_evaluate_predict_follow_keras(tf):
    tf.keras.utils.set_random_seed(1)
    model = compile_cnn(tf, cnn(tf))
    x, y = data()
    history = model.fit(x, y, batch_size=16, epochs=2, verbose=0, validation_data=(x[:16], y[:16]))
    assert history.epoch == [0, 1]
    assert sorted(history.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert len(history.history["loss"]) == 2 and model.history is history
    assert history.params == {"verbose": 0, "epochs": 2, "steps": 4}
    loss, acc = model.evaluate(x, y, verbose=0)
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    assert logs == {"loss": pytest.approx(loss), "accuracy": pytest.approx(acc)}
    assert model.metrics_names == ["loss", "accuracy"]
    assert model.predict(x, verbose=0).shape == (64, 10)
    assert model.optimizer.iterations.numpy() == 8


def test_input_shape_on_the_first_layer_or_an_input_layer_builds_the_model(tf):
    for first in (tf.keras.layers.Flatten(input_shape=(28, 28)), tf.keras.layers.InputLayer(input_shape=(28, 28)),
                  tf.keras.Input(shape=(28, 28))):
        layers = [first] if not isinstance(first, tf.keras.layers.Flatten) else [first]
        rest = [tf.keras.layers.Flatten()] if not isinstance(first, tf.keras.layers.Flatten) else []
        model = tf.keras.Sequential(layers + rest + [tf.keras.layers.Dense(3)])
        assert model.built and model.input_shape == (None, 28, 28)
        assert model.count_params() == 28 * 28 * 3 + 3


def test_functional_model_runs_its_graph_and_names_its_layers(tf):
    inputs = tf.keras.Input(shape=(4,))
    hidden = tf.keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    outputs = tf.keras.layers.Dense(2)(tf.keras.layers.Concatenate()([hidden, inputs]))
    model = tf.keras.Model(inputs=inputs, outputs=outputs)
    assert outputs.shape == (None, 2) and model.output_shape == (None, 2)
    assert model.get_layer("hidden").kernel.shape == (4, 8)
    assert isinstance(model.layers[0], tf.keras.layers.InputLayer)
    x = np.ones((3, 4), np.float32)
    assert model(x).shape == (3, 2)
    model.compile(optimizer="adam", loss="mse")
    model.fit(x, np.zeros((3, 2), np.float32), epochs=1, verbose=0)


def test_layers_called_eagerly_and_their_weights(tf):
    layer = tf.keras.layers.Dense(3, kernel_initializer="ones", bias_initializer=tf.keras.initializers.Zeros())
    out = layer(np.ones((2, 4), np.float32))
    np.testing.assert_allclose(out.numpy(), np.full((2, 3), 4.0))
    assert [w.shape for w in layer.get_weights()] == [(4, 3), (3,)]
    layer.set_weights([np.zeros((4, 3)), np.ones(3)])
    np.testing.assert_allclose(layer(np.ones((1, 4), np.float32)).numpy(), [[1, 1, 1]])
    assert layer.get_config()["units"] == 3 and layer.trainable_variables[0].name.endswith("kernel:0")


def test_train_on_batch_and_custom_training_loop(tf):
    tf.keras.utils.set_random_seed(2)
    model = compile_cnn(tf, cnn(tf))
    x, y = data(32)
    first = model.train_on_batch(x, y)
    assert isinstance(first, list) and len(first) == 2
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                reduction=tf.keras.losses.Reduction.NONE)
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
    train_loss, train_acc = tf.keras.metrics.Mean(name="train_loss"), tf.keras.metrics.SparseCategoricalAccuracy()
    losses = []
    for _ in range(5):
        with tf.GradientTape() as tape:
            predictions = model(x, training=True)
            per_example = loss_object(y, predictions)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=32)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_loss(loss)
        train_acc.update_state(y, predictions)
        losses.append(float(loss))
    assert per_example.shape == (32,)
    assert losses[-1] < losses[0]
    assert optimizer.iterations.numpy() == 5
    assert train_loss.result().numpy() == pytest.approx(np.mean(losses), rel=1e-5)
    train_loss.reset_states()
    assert float(train_loss.result()) == 0


def test_optimizer_learning_rate_reads_and_sets_like_a_variable(tf):
    opt = tf.keras.optimizers.RMSprop(learning_rate=0.5)
    assert opt.learning_rate.numpy() == pytest.approx(0.5)
    opt.learning_rate = 0.25
    assert float(opt.learning_rate) == 0.25
    opt.learning_rate.assign(0.125)
    assert float(opt.learning_rate * 2) == 0.25
    schedule = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    assert float(schedule(10)) == pytest.approx(0.05)
    assert float(tf.keras.optimizers.SGD(learning_rate=schedule).learning_rate) == pytest.approx(0.1)


def test_loss_and_metric_objects_and_functions(tf):
    y_true = np.array([0, 1, 2])
    logits = np.array([[2.0, 0.5, 0.1], [0.1, 0.2, 3.0], [0.3, 0.3, 0.3]], np.float32)
    sce = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    per = tf.keras.losses.sparse_categorical_crossentropy(y_true, logits, from_logits=True).numpy()
    assert float(sce(y_true, logits)) == pytest.approx(per.mean(), rel=1e-6)
    weighted = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="sum")
    assert float(weighted(y_true, logits, sample_weight=[1, 0, 2])) == pytest.approx(per[0] + 2 * per[2], rel=1e-6)
    assert tf.keras.losses.SparseCategoricalCrossentropy(reduction=None, from_logits=True)(y_true, logits).shape == (3,)
    acc = tf.keras.metrics.SparseCategoricalAccuracy()
    assert float(acc(y_true, logits)) == pytest.approx(1 / 3)
    mean = tf.keras.metrics.Mean()
    mean.update_state([1.0, 3.0], sample_weight=[1.0, 3.0])
    assert float(mean.result()) == pytest.approx(2.5)
    mean.reset_state()
    custom = tf.keras.metrics.MeanMetricWrapper(lambda t, p: tf.reduce_sum(p, axis=-1), name="total")
    assert float(custom(y_true, logits)) == pytest.approx(logits.sum(axis=-1).mean(), rel=1e-6)


def test_python_loss_function_trains(tf):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,), kernel_initializer="zeros")])

    def squared(y_true, y_pred):
        return tf.reduce_mean(tf.square(y_pred - y_true), axis=-1)

    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss=squared)
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    history = model.fit(x, np.array([[1.0], [2.0]], np.float32), epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_regularizers_add_model_losses(tf):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,), kernel_initializer="ones",
                                                       kernel_regularizer=tf.keras.regularizers.L2(1e-4)),
                                 tf.keras.layers.Dense(1, kernel_regularizer="l2")])
    assert len(model.losses) == 2
    assert float(model.losses[0]) == pytest.approx(1e-4 * 6)
    assert float(tf.keras.regularizers.l2(0.5)(np.ones(2, np.float32))) == pytest.approx(1.0)


# ---- callbacks ----

def test_python_callback_gets_every_hook_logs_params_and_the_model(tf):
    tf.keras.utils.set_random_seed(3)
    model = compile_cnn(tf, cnn(tf))
    calls = []

    class Recorder(tf.keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            calls.append(("train_begin", dict(self.params), self.model is model))

        def on_epoch_begin(self, epoch, logs=None):
            calls.append(("epoch_begin", epoch))

        def on_train_batch_end(self, batch, logs=None):
            calls.append(("batch_end", batch, sorted(logs)))

        def on_test_end(self, logs=None):
            calls.append(("test_end", sorted(logs)))

        def on_epoch_end(self, epoch, logs=None):
            calls.append(("epoch_end", epoch, sorted(logs)))
            if epoch == 1:
                self.model.stop_training = True

        def on_train_end(self, logs=None):
            calls.append(("train_end",))

    x, y = data(32)
    history = model.fit(x, y, batch_size=16, epochs=5, verbose=0, validation_data=(x, y), callbacks=[Recorder()])
    assert calls[0] == ("train_begin", {"verbose": 0, "epochs": 5, "steps": 2}, True)
    assert calls[1] == ("epoch_begin", 0)
    assert calls[2] == ("batch_end", 0, ["accuracy", "loss"])
    assert ("test_end", ["accuracy", "loss"]) in calls
    assert ("epoch_end", 1, ["accuracy", "loss", "val_accuracy", "val_loss"]) in calls
    assert calls[-1] == ("train_end",) and history.epoch == [0, 1]


def test_an_exception_in_a_callback_reaches_the_caller(tf):
    model = compile_cnn(tf, cnn(tf))

    class Failing(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise KeyError("from the callback")

    x, y = data(16)
    with pytest.raises(KeyError, match="from the callback"):
        model.fit(x, y, epochs=2, verbose=0, callbacks=[Failing()])


def test_learning_rate_scheduler_and_early_stopping(tf):
    model = compile_cnn(tf, cnn(tf))
    x, y = data(32)
    seen = []

    class Rate(tf.keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(round(float(self.model.optimizer.learning_rate), 6))

    schedule = tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))
    stop = tf.keras.callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=100)
    history = model.fit(x, y, epochs=4, verbose=0, callbacks=[schedule, Rate(), stop])
    assert seen[:2] == [0.1, 0.05]
    assert len(history.epoch) < 4


def test_model_checkpoint_writes_keras_weights_files_by_epoch(tf, tmp_path):
    tf.keras.utils.set_random_seed(4)
    model = compile_cnn(tf, cnn(tf))
    x, y = data(32)
    path = tmp_path / "ckpt" / "weights.{epoch:02d}.weights.h5"
    model.fit(x, y, epochs=2, verbose=0,
              callbacks=[tf.keras.callbacks.ModelCheckpoint(str(path), save_weights_only=True)])
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["weights.01.weights.h5", "weights.02.weights.h5"]
    fresh = compile_cnn(tf, cnn(tf))
    fresh.load_weights(str(tmp_path / "ckpt" / "weights.02.weights.h5"))
    np.testing.assert_array_equal(fresh.predict(x, verbose=0), model.predict(x, verbose=0))


def test_backup_and_restore_resumes_exactly(tf, tmp_path):
    x, y = data(64)

    def run(callbacks):
        tf.keras.utils.set_random_seed(5)
        model = compile_cnn(tf, cnn(tf))
        model.fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=callbacks)
        return model

    expected = run([]).get_weights()

    class Crash(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise RuntimeError("worker lost")

    backup = tf.keras.callbacks.experimental.BackupAndRestore(backup_dir=str(tmp_path / "backup"))
    with pytest.raises(RuntimeError, match="worker lost"):
        run([backup, Crash()])
    resumed = run([tf.keras.callbacks.BackupAndRestore(backup_dir=str(tmp_path / "backup"))]).get_weights()
    for a, b in zip(expected, resumed):
        np.testing.assert_array_equal(a, b)


def test_tensorboard_writes_event_files(tf, tmp_path):
    model = compile_cnn(tf, cnn(tf))
    x, y = data(16)
    model.fit(x, y, epochs=1, verbose=0, validation_data=(x, y),
              callbacks=[tf.keras.callbacks.TensorBoard(log_dir=str(tmp_path / "logs"))])
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(tmp_path / "logs" / "train"))
    assert os.listdir(tmp_path / "logs" / "validation")


# ---- saving ----

def test_save_and_load_model_continue_training(tf, tmp_path):
    tf.keras.utils.set_random_seed(6)
    model = compile_cnn(tf, cnn(tf))
    x, y = data(32)
    model.fit(x, y, epochs=1, verbose=0)
    for path in (tmp_path / "model.keras", tmp_path / "saved_model_dir"):
        model.save(str(path))
        loaded = tf.keras.models.load_model(str(path))
        assert isinstance(loaded, tf.keras.Sequential)
        np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
        assert loaded.optimizer.iterations.numpy() == model.optimizer.iterations.numpy()
        loaded.fit(x, y, epochs=1, verbose=0)
    json_model = tf.keras.models.model_from_json(model.to_json())
    assert [l.name for l in json_model.layers] == [l.name for l in model.layers]


# ---- other modules ----

def test_mnist_load_data_reads_keras_cache(tf, tmp_path, monkeypatch):
    cache = tmp_path / ".keras" / "datasets"
    cache.mkdir(parents=True)
    rng = np.random.default_rng(0)
    arrays = {"x_train": rng.integers(0, 255, (6, 28, 28), dtype=np.uint8), "y_train": np.arange(6, dtype=np.uint8),
              "x_test": rng.integers(0, 255, (2, 28, 28), dtype=np.uint8), "y_test": np.arange(2, dtype=np.uint8)}
    np.savez(cache / "mnist.npz", **arrays)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("LOCKSTEP_DATASETS", raising=False)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
    assert x_train.dtype == np.uint8 and x_train.shape == (6, 28, 28)
    np.testing.assert_array_equal(x_train, arrays["x_train"])
    np.testing.assert_array_equal(y_test, arrays["y_test"])


def test_missing_data_set_says_where_to_put_it(tf, tmp_path, monkeypatch):
    if os.path.isdir("/usr/share/datasets/mnist"):
        pytest.skip("this machine has MNIST in /usr/share/datasets, so nothing is missing")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("LOCKSTEP_DATASETS", raising=False)
    with pytest.raises(tf.errors.NotFoundError) as e:
        tf.keras.datasets.mnist.load_data()
    assert "\n" not in str(e.value) and ".keras/datasets" in str(e.value)


def test_mixed_precision_policy(tf):
    try:
        tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
        layer = tf.keras.layers.Dense(2)
        assert layer.compute_dtype == "bfloat16" and layer.dtype_policy.name == "mixed_bfloat16"
        assert tf.keras.mixed_precision.global_policy().name == "mixed_bfloat16"
    finally:
        tf.keras.mixed_precision.set_global_policy("float32")
    with pytest.raises(ValueError, match="mixed_float16"):
        tf.keras.mixed_precision.set_global_policy("mixed_float16")


def test_utils(tf):
    np.testing.assert_array_equal(tf.keras.utils.to_categorical([0, 2], num_classes=3), [[1, 0, 0], [0, 0, 1]])
    tf.keras.backend.clear_session()
    assert tf.keras.layers.Dense(1).name == "dense"


# ---- bad input ----

def one_line(excinfo):
    return "\n" not in str(excinfo.value)


def test_unknown_layer_argument_is_refused_like_keras(tf):
    with pytest.raises(TypeError, match=r"Unrecognized keyword arguments passed to Dense: \{'unit': 3\}") as e:
        tf.keras.layers.Dense(3, unit=3)
    assert isinstance(e.value, ValueError) and one_line(e)  # Keras 3 raises ValueError, Keras 2 TypeError
    with pytest.raises(TypeError):
        tf.keras.layers.Dense()


def test_unsupported_layer_option_names_it(tf):
    with pytest.raises(ValueError, match="dilation_rate") as e:
        tf.keras.layers.Conv2D(4, 3, dilation_rate=2)
    assert one_line(e)
    with pytest.raises(ValueError, match="activation"):
        tf.keras.layers.Dense(2, activation=lambda x: x)


def test_wrong_input_shape_is_an_error_not_a_crash(tf):
    model = compile_cnn(tf, cnn(tf))
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)) as e:
        model.predict(np.zeros((2, 27, 28), np.float32), verbose=0)
    assert one_line(e)
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        model.fit(np.zeros((4, 28, 28), np.float32), np.zeros(3), verbose=0)


def test_missing_model_file(tf, tmp_path):
    with pytest.raises(tf.errors.NotFoundError) as e:
        tf.keras.models.load_model(str(tmp_path / "absent.keras"))
    assert one_line(e) and "absent.keras" in str(e.value)
    with pytest.raises(tf.errors.NotFoundError):
        compile_cnn(tf, cnn(tf)).load_weights(str(tmp_path / "absent.weights.h5"))


def test_fit_before_compile_and_bad_identifiers(tf):
    with pytest.raises(RuntimeError, match="compile"):
        cnn(tf).fit(*data(4), verbose=0)
    with pytest.raises(ValueError, match="nadam"):
        cnn(tf).compile(optimizer="nadam", loss="mse")
    with pytest.raises(ValueError, match="clipnorm"):
        tf.keras.optimizers.Adam(clipnorm=1.0)


def test_what_lockstep_lacks_says_so(tf):
    with pytest.raises(NotImplementedError, match="tf.keras.layers.LSTM is not implemented by lockstep"):
        tf.keras.layers.LSTM(4)


# ---- agreement with TensorFlow's Keras ----

def test_predictions_losses_and_a_training_step_agree_with_tensorflow(tf):
    real = tensorflow_or_skip()
    ours, theirs = cnn(tf), cnn(real)
    theirs.set_weights(ours.get_weights())
    x, y = data(16)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), atol=1e-5)
    compile_cnn(tf, ours, lr=0.1)
    compile_cnn(real, theirs, lr=0.1)
    for a, b in zip(ours.evaluate(x, y, verbose=0), theirs.evaluate(x, y, verbose=0)):
        assert a == pytest.approx(b, abs=1e-5)
    ours.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    theirs.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)
    logits = ours.predict(x, verbose=0)
    for name in ("sparse_categorical_crossentropy",):
        ours_loss = getattr(tf.keras.losses, name)(y, logits, from_logits=True).numpy()
        their_loss = getattr(real.keras.losses, name)(y, logits, from_logits=True).numpy()
        np.testing.assert_allclose(ours_loss, their_loss, rtol=1e-5)


def test_keras_files_move_between_lockstep_and_tensorflow(tf, tmp_path):
    real = tensorflow_or_skip()
    x, y = data(16)
    ours = compile_cnn(tf, cnn(tf))
    ours.fit(x, y, epochs=1, verbose=0)
    ours.save(str(tmp_path / "ours.keras"))
    ours.save_weights(str(tmp_path / "ours.weights.h5"))
    loaded = real.keras.models.load_model(str(tmp_path / "ours.keras"))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), ours.predict(x, verbose=0), atol=1e-5)
    weights_only = cnn(real)
    weights_only.load_weights(str(tmp_path / "ours.weights.h5"))
    np.testing.assert_allclose(weights_only.predict(x, verbose=0), ours.predict(x, verbose=0), atol=1e-5)

    theirs = compile_cnn(real, cnn(real))
    theirs.fit(x, y, epochs=1, verbose=0)
    theirs.save(str(tmp_path / "theirs.keras"))
    theirs.save_weights(str(tmp_path / "theirs.weights.h5"))
    back = tf.keras.models.load_model(str(tmp_path / "theirs.keras"))
    np.testing.assert_allclose(back.predict(x, verbose=0), theirs.predict(x, verbose=0), atol=1e-5)
    assert back.optimizer.iterations.numpy() == theirs.optimizer.iterations.numpy()
    mine = cnn(tf)
    mine.load_weights(str(tmp_path / "theirs.weights.h5"))
    np.testing.assert_allclose(mine.predict(x, verbose=0), theirs.predict(x, verbose=0), atol=1e-5)


def test_clone_model_input_output_and_symbolic_operators(tf):
    inputs = tf.keras.Input(shape=(3,))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(2)(inputs))
    assert model.input is inputs and model.output.shape == (None, 2)
    clone = tf.keras.models.clone_model(model)
    assert clone.count_params() == model.count_params()
    assert not np.array_equal(clone.get_weights()[0], model.get_weights()[0])
    assert (inputs / 255.0).shape == (None, 3)  # operator and tf.* layers: test_keras_subclass
    with pytest.raises(NotImplementedError, match="symbolic tensor"):
        np.asarray(inputs)


def test_a_damaged_weights_file_is_named(tf, tmp_path):
    path = tmp_path / "junk.weights.h5"
    path.write_text("not hdf5")
    with pytest.raises(tf.errors.DataLossError, match="junk.weights.h5 is not a readable HDF5 file") as e:
        compile_cnn(tf, cnn(tf)).load_weights(str(path))
    assert one_line(e)


def test_a_keras_file_of_tf_keras_loads_with_its_optimizer_state(tf, tmp_path):
    """tf_keras (Keras 2) writes no learning-rate variable and lays the slots out variable by variable; the next
    training step after loading must be tf_keras' own next step, which needs every slot in its place."""
    tensorflow_or_skip()
    tf_keras = pytest.importorskip("tf_keras", reason="tf_keras is not installed in this venv")
    x = np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32)
    y = np.random.default_rng(1).normal(size=(8, 2)).astype(np.float32)
    theirs = tf_keras.Sequential([tf_keras.Input((3,)), tf_keras.layers.Dense(4, activation="relu"),
                                  tf_keras.layers.Dense(2)])
    theirs.compile(tf_keras.optimizers.Adam(0.01), "mse")
    theirs.fit(x, y, batch_size=8, epochs=3, verbose=0)
    theirs.save(str(tmp_path / "keras2.keras"))
    ours = tf.keras.models.load_model(str(tmp_path / "keras2.keras"))
    assert ours.optimizer.iterations.numpy() == 3
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), atol=1e-5)
    theirs.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    ours.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)
