"""Makes tests/golden/nan_golden.json: what TensorFlow gives for NaN, +Inf and -Inf inputs, op by op: activations,
elementwise math, maximum/minimum, reductions, argmax, softmax, pooling, the fused cross-entropy ("ops", read by the
op harness, tests/autograd/op_harness_test.cc) and the Keras losses ("losses", read by nan_golden_test.cc). Each case
holds its inputs, and per float dtype the output and the gradients of sum(output * w), w[i] = 1 + (i % 3) / 2.
Non-finite numbers are written as the strings "nan", "inf" and "-inf" (JSON has no literal for them).

Generated with TensorFlow 2.21.0 / Keras 3.15.1, with TF's own kernels (TF_ENABLE_ONEDNN_OPTS=0: its oneDNN softmax
gives [nan, 0, 0, 0] in float32 where its float64 and GPU kernels give all NaN). Rerun from the source root:
    build/venv/bin/python3 tests/golden/make_nan_golden.py
"""
import json
import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

nan, inf = float("nan"), float("inf")

# One of every kind of value an activation treats differently: NaN, both infinities, saturating magnitudes, zero.
SPECIAL = [nan, inf, -inf, -1.5, 0.0, 2.0, 50.0, -50.0, 100.0, -100.0, 0.5, nan]
# A second operand that puts NaN and the infinities against NaN, infinities and finite values in the first.
OTHER = [1.0, nan, inf, inf, -inf, nan, 2.0, -inf, 0.0, 0.0, -0.5, nan]
# Rows with NaN first and later, +Inf with -Inf, only -Inf, and a finite row.
ROWS = [[nan, 1, 2, 3], [inf, 1, -inf, 3], [-inf, -inf, -inf, -inf], [1, nan, inf, 2], [inf, 1, 2, inf],
        [-inf, 1, 2, 3], [1, 2, 3, 4]]
# A 4x4 image: 2x2 windows holding NaN first, -Inf beside finite values, only -Inf, and only NaN.
IMAGE = [[nan, 1, 2, 3], [3, -inf, -inf, -inf], [-inf, -inf, nan, nan], [-inf, -inf, nan, nan]]


def image(channels):
    """IMAGE as [1, 4, 4, channels], channel c holding IMAGE + c (so channels differ; NaN and Inf stay)."""
    a = np.asarray(IMAGE, np.float64)
    return np.stack([a + c for c in range(channels)], axis=-1)[None]


def encode(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def tensor_json(a):
    a = np.asarray(a)
    dtype = "int64" if a.dtype.kind in "iu" else "float"
    values = [int(v) for v in a.reshape(-1)] if dtype == "int64" else [encode(v) for v in a.reshape(-1)]
    return {"shape": list(a.shape), "dtype": dtype, "values": values}


def weights(shape, dtype):
    n = int(np.prod(shape))
    return tf.constant((1 + (np.arange(n) % 3) / 2).reshape(shape), dtype)


def floats(values):
    return np.asarray(values, np.float64)


def labels(values):
    return np.asarray(values, np.int64)


def pool(kind, size, stride, padding):
    f = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
    return lambda x: f(x, size, stride, padding)


SPECIAL_BINARY = [floats(SPECIAL), floats(OTHER)]
# name: (function of tf tensors, inputs). Names match the C++ tables' rows.
OPS = {
    "relu": (tf.nn.relu, [floats(SPECIAL)]),
    "sigmoid": (tf.sigmoid, [floats(SPECIAL)]),
    "tanh": (tf.tanh, [floats(SPECIAL)]),
    "exp": (tf.exp, [floats(SPECIAL)]),
    "log": (tf.math.log, [floats(SPECIAL)]),
    "sqrt": (tf.sqrt, [floats(SPECIAL)]),
    "rsqrt": (tf.math.rsqrt, [floats(SPECIAL)]),
    "square": (tf.square, [floats(SPECIAL)]),
    "abs": (tf.abs, [floats(SPECIAL)]),
    "sign": (tf.sign, [floats(SPECIAL)]),
    "negative": (tf.negative, [floats(SPECIAL)]),
    "add": (tf.add, SPECIAL_BINARY),
    "subtract": (tf.subtract, SPECIAL_BINARY),
    "multiply": (tf.multiply, SPECIAL_BINARY),
    "divide": (tf.divide, SPECIAL_BINARY),
    "pow": (tf.pow, SPECIAL_BINARY),
    "maximum": (tf.maximum, SPECIAL_BINARY),
    "minimum": (tf.minimum, SPECIAL_BINARY),
    "maximum_with_zero": (lambda x, z: tf.maximum(x, z), [floats(SPECIAL), floats(0.0)]),
    "minimum_with_nan": (lambda x, z: tf.minimum(x, z), [floats(SPECIAL), floats(nan)]),
    "reduce_sum_all": (lambda x: tf.reduce_sum(x), [floats(ROWS)]),
    "reduce_sum_rows": (lambda x: tf.reduce_sum(x, -1), [floats(ROWS)]),
    "reduce_sum_columns": (lambda x: tf.reduce_sum(x, 0), [floats(ROWS)]),
    "reduce_mean_rows": (lambda x: tf.reduce_mean(x, -1), [floats(ROWS)]),
    "reduce_mean_columns": (lambda x: tf.reduce_mean(x, 0), [floats(ROWS)]),
    "reduce_max_rows": (lambda x: tf.reduce_max(x, -1), [floats(ROWS)]),
    "reduce_max_columns": (lambda x: tf.reduce_max(x, 0), [floats(ROWS)]),
    "reduce_min_rows": (lambda x: tf.reduce_min(x, -1), [floats(ROWS)]),
    "reduce_min_columns": (lambda x: tf.reduce_min(x, 0), [floats(ROWS)]),
    "l2_loss_with_inf": (tf.nn.l2_loss, [floats(ROWS[4])]),
    "l2_loss_with_nan": (tf.nn.l2_loss, [floats(ROWS)]),
    "argmax_rows": (lambda x: tf.argmax(x, -1), [floats(ROWS)]),
    "argmax_columns": (lambda x: tf.argmax(x, 0), [floats(ROWS)]),
    "softmax_rows": (lambda x: tf.nn.softmax(x, -1), [floats(ROWS)]),
    "softmax_columns": (lambda x: tf.nn.softmax(x, 0), [floats(ROWS)]),
    "log_softmax_rows": (lambda x: tf.nn.log_softmax(x, -1), [floats(ROWS)]),
    "log_softmax_columns": (lambda x: tf.nn.log_softmax(x, 0), [floats(ROWS)]),
    "sparse_softmax_xent": (lambda l, x: tf.nn.sparse_softmax_cross_entropy_with_logits(l, x),
                            [labels([0, 1, 2, 3, 0, 0, 1]), floats(ROWS)]),
    "max_pool2d_valid_2x2": (pool("max", 2, 2, "VALID"), [image(1)]),
    "max_pool2d_valid_2x2_stride1": (pool("max", 2, 1, "VALID"), [image(1)]),
    "max_pool2d_same_3x3": (pool("max", 3, 2, "SAME"), [image(1)]),
    "max_pool2d_valid_2x2_16_channels": (pool("max", 2, 2, "VALID"), [image(16)]),
    "avg_pool2d_valid_2x2": (pool("avg", 2, 2, "VALID"), [image(1)]),
    "avg_pool2d_valid_2x2_stride1": (pool("avg", 2, 1, "VALID"), [image(1)]),
    "avg_pool2d_same_3x3": (pool("avg", 3, 2, "SAME"), [image(1)]),
    "avg_pool2d_valid_2x2_16_channels": (pool("avg", 2, 2, "VALID"), [image(16)]),
}

# Probabilities with NaN, +Inf and zeros in y_pred, and targets for them.
PROBABILITIES = [[nan, 0.5, 0.5], [inf, 0.25, 0.25], [0.0, 0.0, 1.0], [0.2, 0.3, 0.5], [-inf, 0.5, 0.5]]
LOGITS = [[nan, 1, 2], [inf, 1, 2], [-inf, 1, 2], [inf, -inf, 0], [1, 2, 3]]
ONE_HOT = [[0, 1, 0], [1, 0, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0]]
BINARY_TARGETS = [[0, 1, 0], [1, 0, 1], [1, 1, 0], [0, 0, 1], [1, 0, 1]]
CLASSES = [1, 0, 0, 2, 1]
kl = keras.losses
LOSSES = {
    "sparse_categorical_crossentropy_logits": (lambda t, p: kl.sparse_categorical_crossentropy(t, p, from_logits=True),
                                               [labels(CLASSES), floats(LOGITS)]),
    "sparse_categorical_crossentropy_probabilities": (lambda t, p: kl.sparse_categorical_crossentropy(t, p),
                                                      [labels(CLASSES), floats(PROBABILITIES)]),
    "categorical_crossentropy_logits": (lambda t, p: kl.categorical_crossentropy(t, p, from_logits=True),
                                        [floats(ONE_HOT), floats(LOGITS)]),
    "categorical_crossentropy_probabilities": (lambda t, p: kl.categorical_crossentropy(t, p),
                                               [floats(ONE_HOT), floats(PROBABILITIES)]),
    "binary_crossentropy_logits": (lambda t, p: kl.binary_crossentropy(t, p, from_logits=True),
                                   [floats(BINARY_TARGETS), floats(LOGITS)]),
    "binary_crossentropy_probabilities": (lambda t, p: kl.binary_crossentropy(t, p),
                                          [floats(BINARY_TARGETS), floats(PROBABILITIES)]),
    "mean_squared_error": (kl.mean_squared_error, [floats(ONE_HOT), floats(LOGITS)]),
    "mean_absolute_error": (kl.mean_absolute_error, [floats(ONE_HOT), floats(LOGITS)]),
}


def run(fn, inputs, dtype):
    xs = [tf.constant(a, dtype if a.dtype.kind == "f" else tf.int64) for a in inputs]
    watched = [x for x in xs if x.dtype.is_floating]
    with tf.GradientTape() as tape:
        tape.watch(watched)
        y = fn(*xs)
        if y.dtype.is_floating:
            loss = tf.reduce_sum(y * weights(y.shape, y.dtype))
    # One gradient per input; null for integer inputs (labels), and for every input of an integer output (argmax).
    out = {"output": tensor_json(y.numpy()), "gradients": [None] * len(xs)}
    if y.dtype.is_floating:
        grads = iter(tape.gradient(loss, watched))
        out["gradients"] = [tensor_json(next(grads).numpy()) if x.dtype.is_floating else None for x in xs]
    return out


def cases(table):
    out = []
    for name, (fn, inputs) in table.items():
        case = {"name": name, "inputs": [tensor_json(a) for a in inputs]}
        for dtype in (tf.float32, tf.float64):
            case[dtype.name] = run(fn, inputs, dtype)
        out.append(case)
    return out


def main():
    doc = {"tensorflow_version": tf.__version__, "keras_version": keras.__version__,
           "ops": cases(OPS), "losses": cases(LOSSES)}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nan_golden.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
