"""tf.keras with tf.data, tf.distribute and tf.train: fit/evaluate/predict on Datasets and distributed datasets,
models, metrics and optimizers made in a MirroredStrategy's scope (fit and a custom loop with strategy.run), and
models and optimizers in a tf.train.Checkpoint."""
import numpy as np
import pytest

from lockstep import _unimplemented


def needs(tf, *modules):
    for name in modules:
        if isinstance(getattr(tf, name), _unimplemented.Missing):
            pytest.skip(f"tf.{name} is not in this build of lockstep")


def cnn(tf):
    return tf.keras.Sequential([
        tf.keras.Input(shape=(8, 8)),
        tf.keras.layers.Reshape((8, 8, 1)),
        tf.keras.layers.Conv2D(4, 3, activation="relu", kernel_regularizer=tf.keras.regularizers.L2(1e-4)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(3),
    ])


def arrays(n=64):
    rng = np.random.default_rng(3)
    return rng.random((n, 8, 8), dtype=np.float32), rng.integers(0, 3, n).astype(np.int64)


def compiled(tf, model):
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def test_fit_evaluate_predict_on_datasets(tf):
    needs(tf, "data")
    x, y = arrays()
    train = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(64, seed=1).batch(16).repeat()
    test = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    tf.keras.utils.set_random_seed(1)
    model = compiled(tf, cnn(tf))
    history = model.fit(train, epochs=2, steps_per_epoch=4, validation_data=test, verbose=0)
    assert history.epoch == [0, 1] and "val_accuracy" in history.history
    on_data = model.evaluate(test, verbose=0, return_dict=True)
    on_arrays = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    assert on_data["loss"] == pytest.approx(on_arrays["loss"], rel=1e-6)
    np.testing.assert_allclose(model.predict(test, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    with pytest.raises(ValueError, match="y"):
        model.fit(train, y, steps_per_epoch=1, verbose=0)


def test_fit_and_a_custom_loop_under_mirrored_strategy(tf):
    needs(tf, "data", "distribute")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    assert strategy.num_replicas_in_sync == 2
    x, y = arrays()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    with strategy.scope():
        model = compiled(tf, cnn(tf))
    seen = []

    class Batches(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)

    model.fit(dataset, epochs=1, verbose=0, callbacks=[Batches()])
    model.fit(strategy.experimental_distribute_dataset(dataset), epochs=1, verbose=0)
    assert seen == [0, 1, 2, 3]
    assert model.distribute_strategy is strategy

    class Scope(tf.keras.callbacks.Callback):  # Keras runs fit in the model's strategy scope
        def on_train_begin(self, logs=None):
            seen.append(tf.distribute.get_strategy() is strategy)

    model.fit(dataset, epochs=1, verbose=0, callbacks=[Scope()])
    assert seen[-1] is True and not tf.distribute.has_strategy()

    with strategy.scope():
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                    reduction=tf.keras.losses.Reduction.NONE)
        optimizer = tf.keras.optimizers.Adam(0.01)
        accuracy = tf.keras.metrics.SparseCategoricalAccuracy()

    def step(inputs):
        images, labels = inputs
        with tf.GradientTape() as tape:
            predictions = model(images, training=True)
            loss = tf.nn.compute_average_loss(loss_object(labels, predictions), global_batch_size=16)
            loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        accuracy.update_state(labels, predictions)
        return loss

    total = 0.0
    for batch in strategy.experimental_distribute_dataset(dataset):
        total += float(strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(step, args=(batch,)), axis=None))
    assert optimizer.iterations.numpy() == 4 and 0 <= float(accuracy.result()) <= 1 and total > 0
    with pytest.raises(ValueError, match="Reduction"):
        with strategy.scope():
            strategy.run(lambda b: tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
                b[1], model(b[0])), args=(next(iter(strategy.experimental_distribute_dataset(dataset))),))


def test_models_and_optimizers_in_a_checkpoint(tf, tmp_path):
    needs(tf, "train")
    tf.keras.utils.set_random_seed(2)
    x, y = arrays(32)
    model = compiled(tf, cnn(tf))
    model.fit(x, y, epochs=1, verbose=0)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    path = checkpoint.save(str(tmp_path / "ckpt"))
    fresh = compiled(tf, cnn(tf))
    tf.train.Checkpoint(model=fresh, optimizer=fresh.optimizer).restore(path)
    np.testing.assert_array_equal(fresh.predict(x, verbose=0), model.predict(x, verbose=0))
    assert fresh.optimizer.iterations.numpy() == model.optimizer.iterations.numpy()


def test_a_subclassed_model_fits_under_mirrored_strategy(tf):
    needs(tf, "data", "distribute")

    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.flatten = tf.keras.layers.Flatten()
            self.dense = tf.keras.layers.Dense(3, kernel_regularizer="l2")

        def call(self, x, training=False):
            return self.dense(self.flatten(x))

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    x, y = arrays()
    with strategy.scope():
        model = compiled(tf, Net())
    history = model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(16), epochs=2, verbose=0)
    assert history.history["loss"][1] < history.history["loss"][0]


def write_png(path, pixels):
    """A grayscale 8-bit PNG of `pixels` (uint8 [h, w])."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\0" + row.tobytes() for row in pixels)
    h, w = pixels.shape
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
                     chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_image_dataset_from_directory_feeds_fit(tf, tmp_path, capfd):
    needs(tf, "data")
    rng = np.random.default_rng(0)
    for label, value in (("dark", 30), ("light", 220)):
        (tmp_path / label).mkdir()
        for i in range(6):
            write_png(tmp_path / label / f"{i}.png", np.clip(rng.normal(value, 10, (8, 8)), 0, 255).astype(np.uint8))
    train, val = tf.keras.utils.image_dataset_from_directory(
        str(tmp_path), color_mode="grayscale", image_size=(8, 8), batch_size=4, seed=1, validation_split=0.25,
        subset="both")
    assert "Found 12 files belonging to 2 classes." in capfd.readouterr().out
    assert train.class_names == ["dark", "light"] and len(train.file_paths) == 9
    images, labels = next(iter(train))
    assert images.shape == (4, 8, 8, 1) and images.dtype == tf.float32 and labels.dtype == tf.int32
    model = tf.keras.Sequential([tf.keras.Input(shape=(8, 8, 1)), tf.keras.layers.Rescaling(1 / 255),
                                 tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    history = model.fit(train, validation_data=val, epochs=30, verbose=0)
    assert history.history["val_accuracy"][-1] == 1.0


def test_compile_outside_the_scope_uses_the_models_strategy(tf):
    needs(tf, "data", "distribute")
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = cnn(tf)
    compiled(tf, model)  # outside the scope, as TF 2 allows
    x, y = arrays(32)
    history = model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(16), epochs=2, verbose=0)
    assert len(history.epoch) == 2 and model.optimizer.iterations.numpy() == 4
