"""Makes tests/golden/class_golden.json: golden values of single Keras classes, computed by Keras itself, for the
classes that came through the registries' one-declaration path (docs/design.md, "One declaration per class"):
    - losses: the loss of each reduction (with and without sample weights) and its gradient with respect to y_pred;
    - optimizers: a short training run (train_on_batch) of a small model from set weights and batches, the losses
      of every step and the final weights.
The test (class_golden_test.cc) makes each object from the config recorded here through lockstep's registry.

Generated with TensorFlow 2.21.0 / Keras 3.15.1. Rerun from the source root:
    build/venv/bin/python3 tests/golden/make_class_golden.py
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

tf.config.experimental.enable_op_determinism()
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
rng = np.random.RandomState(35)


def floats(*shape, scale=1.0):
    return (rng.uniform(-1, 1, size=shape) * scale).astype(np.float32)


def tensor_json(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "values": a.reshape(-1).tolist()}


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


# Each loss's (y_true, y_pred), [5, 3], of the kind the loss expects.
def regression():
    return floats(5, 3, scale=2), floats(5, 3, scale=2)


def distributions():  # rows that sum to 1
    return softmax(floats(5, 3, scale=2)), softmax(floats(5, 3, scale=2))


def distributions_and_stray_predictions():  # predictions in [-0.1, 1.1]: some are clipped
    return softmax(floats(5, 3, scale=2)), floats(5, 3, scale=0.6) + np.float32(0.5)


def counts():  # counts and positive rates
    return rng.poisson(2, size=(5, 3)).astype(np.float32), np.exp(floats(5, 3)).astype(np.float32)


def signs():  # labels -1 or 1
    return np.where(floats(5, 3) > 0, 1, -1).astype(np.float32), floats(5, 3, scale=2)


def bits():  # labels 0 or 1, which hinge takes as -1 or 1
    return (floats(5, 3) > 0).astype(np.float32), floats(5, 3, scale=2)


# (name, class, arguments, data). The arguments are recorded with the config: Keras 3.15's Huber.get_config()
# leaves delta out.
LOSSES = [
    ("huber_default", keras.losses.Huber, {}, regression),
    ("huber_delta_0.3_sum", keras.losses.Huber, {"delta": 0.3, "reduction": "sum"}, regression),
    ("huber_delta_2_none", keras.losses.Huber, {"delta": 2.0, "reduction": "none"}, regression),
    ("kl_divergence_default", keras.losses.KLDivergence, {}, distributions),
    ("kl_divergence_clipped_sum", keras.losses.KLDivergence, {"reduction": "sum"}, distributions_and_stray_predictions),
    ("kl_divergence_none", keras.losses.KLDivergence, {"reduction": "none"}, distributions),
    ("poisson_default", keras.losses.Poisson, {}, counts),
    ("poisson_sum", keras.losses.Poisson, {"reduction": "sum"}, counts),
    ("poisson_none", keras.losses.Poisson, {"reduction": "none"}, counts),
    ("log_cosh_default", keras.losses.LogCosh, {}, regression),
    ("log_cosh_sum", keras.losses.LogCosh, {"reduction": "sum"}, regression),
    ("log_cosh_none", keras.losses.LogCosh, {"reduction": "none"}, regression),
    ("hinge_default", keras.losses.Hinge, {}, signs),
    ("hinge_binary_labels_sum", keras.losses.Hinge, {"reduction": "sum"}, bits),
    ("hinge_other_labels_none", keras.losses.Hinge, {"reduction": "none"}, regression),
]


def loss_rows():
    out = []
    for name, klass, arguments, data in LOSSES:
        loss = klass(**arguments)
        y_true, y_pred = data()
        weights = np.abs(floats(5))
        for weighted in (False, True):
            p = tf.Variable(y_pred)
            with tf.GradientTape() as tape:
                value = loss(y_true, p, sample_weight=weights if weighted else None)
                total = tf.reduce_sum(value)
            grad = tape.gradient(total, p)
            out.append({"name": name + ("_weighted" if weighted else ""), "class_name": type(loss).__name__,
                        "config": {**loss.get_config(), **arguments}, "y_true": tensor_json(y_true), "y_pred": tensor_json(y_pred),
                        "sample_weight": tensor_json(weights) if weighted else None, "loss": tensor_json(value),
                        "gradient_of_sum": tensor_json(grad)})
    return out


OPTIMIZERS = [
    ("adamw_default", lambda: keras.optimizers.AdamW()),
    ("adamw_lr_0.01_decay_0.1", lambda: keras.optimizers.AdamW(learning_rate=0.01, weight_decay=0.1)),
    ("adamw_amsgrad", lambda: keras.optimizers.AdamW(learning_rate=0.005, weight_decay=0.02, amsgrad=True)),
    ("adagrad_default", lambda: keras.optimizers.Adagrad()),
    ("adagrad_lr_0.05", lambda: keras.optimizers.Adagrad(learning_rate=0.05)),
    ("adagrad_no_initial_accumulator", lambda: keras.optimizers.Adagrad(learning_rate=0.02,
                                                                        initial_accumulator_value=0.0, epsilon=1e-3)),
]
STEPS = 10


def optimizer_rows():
    out = []
    for name, make in OPTIMIZERS:
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])
        initial = [floats(*w.shape) for w in model.get_weights()]
        model.set_weights(initial)
        optimizer = make()
        model.compile(optimizer=optimizer, loss="mse", jit_compile=False)
        batches = [(floats(8, 5), floats(8, 2)) for _ in range(STEPS)]
        losses = [float(model.train_on_batch(x, y)) for x, y in batches]
        out.append({"name": name, "class_name": type(optimizer).__name__,
                    "config": {k: v for k, v in optimizer.get_config().items() if k != "name"},
                    "initial_weights": [tensor_json(w) for w in initial],
                    "batches": [{"x": tensor_json(x), "y": tensor_json(y)} for x, y in batches],
                    "losses": losses, "final_weights": [tensor_json(w) for w in model.get_weights()]})
    return out


def main():
    golden = {"keras_version": keras.__version__, "losses": loss_rows(), "optimizers": optimizer_rows()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "class_golden.json")
    with open(path, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
