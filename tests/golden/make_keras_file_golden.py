#!/usr/bin/env python3
"""Writes the .keras golden files that tests/keras/keras_file_test.cc loads: small Sequential models trained a few
steps in TensorFlow 2.21 / Keras 3 and saved with model.save(...keras), and keras_file_golden.json with, for each,
predictions on fixed inputs, a digest of the optimizer's variables, model.to_json(), and one more train_on_batch step
(its loss and the predictions after it).

Run: /work/tfvenv/bin/python tests/golden/make_keras_file_golden.py   (or any Python with tensorflow==2.21.*)
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def data(rng, n, shape, classes):
    x = rng.random((n,) + shape, dtype=np.float32)
    y = rng.integers(0, classes, n) if classes else rng.random((n, 1), dtype=np.float32)
    return x, y


def models():
    # Dropout makes a training step random, so the model with it has no step to compare.
    yield "cnn_adam", True, (8, 8), 3, lambda: (
        keras.Sequential([keras.Input((8, 8)), keras.layers.Reshape((8, 8, 1)),
                          keras.layers.Conv2D(4, 3, activation="relu"), keras.layers.MaxPooling2D(),
                          keras.layers.Flatten(), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dropout(0.25), keras.layers.Dense(3)]),
        dict(optimizer=keras.optimizers.Adam(0.01),
             loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"]))
    yield "bn_sgd_momentum", False, (8, 8), 3, lambda: (
        keras.Sequential([keras.Input((8, 8)), keras.layers.Reshape((8, 8, 1)),
                          keras.layers.Conv2D(4, 3, strides=1, padding="same", use_bias=False),
                          keras.layers.BatchNormalization(momentum=0.9), keras.layers.Activation("relu"),
                          keras.layers.AveragePooling2D(2), keras.layers.Flatten(),
                          keras.layers.Dense(8, activation="tanh", kernel_regularizer=keras.regularizers.L2(0.01)),
                          keras.layers.Dense(3, activation="softmax")]),
        dict(optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
             loss=keras.losses.SparseCategoricalCrossentropy(), metrics=["accuracy"]))
    yield "mlp_rmsprop_centered", False, (6,), 0, lambda: (
        keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]),
        dict(optimizer=keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True), loss="mse"))


def main():
    golden = {}
    for name, dropout, shape, classes, make in models():
        keras.backend.clear_session()  # names as in a fresh process: "sequential", "conv2d", ...
        keras.utils.set_random_seed(1)
        rng = np.random.default_rng(7)
        model, compile_args = make()
        model.compile(**compile_args)
        x, y = data(rng, 64, shape, classes)
        model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        path = os.path.join(HERE, f"keras_file_{name}.keras")
        model.save(path)
        x_pred, _ = data(rng, 4, shape, classes)
        x_step, y_step = data(rng, 8, shape, classes)
        entry = {
            "file": os.path.basename(path),
            "x_pred": x_pred.tolist(),
            "y_pred": model.predict(x_pred, verbose=0).tolist(),
            "iterations": int(model.optimizer.iterations.numpy()),
            # Keras' optimizer variables in file order (iterations, learning_rate, slots): shape, sum, sum of |x|.
            "optimizer_variables": [
                {"path": v.path, "shape": list(v.shape), "sum": float(np.sum(v.numpy(), dtype=np.float64)),
                 "abs_sum": float(np.sum(np.abs(v.numpy()), dtype=np.float64))}
                for v in model.optimizer.variables],
        }
        entry["to_json"] = model.to_json()
        if not dropout:
            entry["x_step"] = x_step.tolist()
            entry["y_step"] = y_step.tolist()
            entry["step_loss"] = float(model.train_on_batch(x_step, y_step, return_dict=True)["loss"])
            entry["y_pred_after_step"] = model.predict(x_pred, verbose=0).tolist()
        golden[name] = entry
    with open(os.path.join(HERE, "keras_file_golden.json"), "w") as f:
        json.dump({"keras": keras.version(), "models": golden}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
