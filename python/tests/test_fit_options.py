"""fit/evaluate/train_on_batch's Keras arguments reach the C++ fit as one set of keyword arguments (keras::FitOptions):
class_weight, sample_weight, validation_split, validation_batch_size and validation_freq are applied there, and an
argument left out takes the C++ default."""
import numpy as np
import pytest


def zero_model(tf, units=1):
    """Predicts 0 and never learns: its mean squared error is the mean of y * y, weighted as Keras weights it."""
    model = tf.keras.Sequential([tf.keras.Input(shape=(1,)),
                                 tf.keras.layers.Dense(units, use_bias=False, kernel_initializer="zeros")])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.0), loss="mse")
    return model


def column(values):
    return np.asarray(values, np.float32).reshape(-1, 1)


def test_class_weight_weighs_each_sample_by_its_class(tf):
    model = zero_model(tf)
    x, y = column([1, 1, 1, 1]), column([0, 1, 2, 1])
    weights = {1: 3.0, 2: 0.25}
    expected = (0 * 1 + 1 * 3 + 4 * 0.25 + 1 * 3) / 4
    assert model.fit(x, y, class_weight=weights, verbose=0).history["loss"][0] == pytest.approx(expected)
    assert model.train_on_batch(x, y, class_weight=weights) == pytest.approx(expected)
    with_samples = model.fit(x, y, class_weight=weights, sample_weight=np.array([1, 1, 2, 0]), verbose=0)
    assert with_samples.history["loss"][0] == pytest.approx((3 + 4 * 0.5) / 4)
    assert model.evaluate(x, y, sample_weight=np.array([0, 0, 1, 0]), verbose=0) == pytest.approx(4 / 4)


def test_validation_split_holds_out_the_last_samples_and_validation_freq_skips_epochs(tf):
    model = zero_model(tf)
    x, y = column(np.ones(10)), column(np.arange(10))
    history = model.fit(x, y, validation_split=0.2, batch_size=3, epochs=4, validation_freq=2, verbose=0)
    assert len(history.history["loss"]) == 4 and len(history.history["val_loss"]) == 2
    assert history.history["val_loss"][0] == pytest.approx((64 + 81) / 2)
    assert history.history["loss"][0] == pytest.approx(140 / 8)
    history = model.fit(x, y, validation_data=(x[:2], y[8:], np.array([1.0, 0.0])), validation_batch_size=1,
                        verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(64 / 2)


def test_arguments_left_out_take_the_cpp_defaults(tf):
    model = zero_model(tf)
    x, y = column(np.ones(40)), column(np.ones(40))
    history = model.fit(x, y, verbose=0)
    assert history.params == {"verbose": 0, "epochs": 1, "steps": 2}  # batch_size 32
    assert int(model.optimizer.iterations) == 2
    with pytest.raises(TypeError, match="got unexpected keyword arguments: bogus"):
        model._engine.fit(x, y, epochs=1, bogus=1)


def test_dataset_inputs_refuse_the_array_only_arguments(tf):
    model = zero_model(tf)
    x, y = column(np.ones(4)), column(np.ones(4))
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)
    with pytest.raises(ValueError, match="`validation_split` is only supported for Tensors or NumPy arrays"):
        model.fit(ds, validation_split=0.5, verbose=0)
    with pytest.raises(ValueError, match="`sample_weight` argument is not supported when using a dataset"):
        model.fit(ds, sample_weight=np.ones(4), verbose=0)
    with pytest.raises(ValueError, match="`sample_weight` argument is not supported when using a dataset"):
        model.evaluate(ds, sample_weight=np.ones(4), verbose=0)
    with pytest.raises(ValueError, match="`class_weight` argument is not supported"):
        model.fit(ds, class_weight={0: 1.0}, verbose=0)
    with pytest.raises(ValueError, match="pass validation_data or validation_split, not both"):
        model.fit(x, y, validation_split=0.5, validation_data=ds, verbose=0)
    with pytest.raises(ValueError, match=r"validation_data must be \(x_val, y_val\)"):
        model.fit(x, y, validation_data=(x,), verbose=0)
    assert int(model.optimizer.iterations) == 0
