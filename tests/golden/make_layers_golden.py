"""Makes tests/golden/layers_golden.json: forward values of the layers lockstep added for Keras models
(GlobalAveragePooling2D, GlobalMaxPooling2D, Embedding, LayerNormalization, Rescaling, Add, Concatenate,
AveragePooling2D, Activation, UpSampling2D, Conv1D, MaxPooling1D, AveragePooling1D, GlobalAveragePooling1D,
GlobalMaxPooling1D), computed by Keras on small inputs with set weights, with each layer's Keras config; the rows of
Conv1D and the 1-D poolings also hold TF's gradients of sum(y * upstream).
The test (layers_golden_test.cc) builds each layer from that config, loads the weights and compares.

Generated with TensorFlow 2.21.0 / Keras 3.15.1. Rerun from the source root:
    build/venv/bin/python3 tests/golden/make_layers_golden.py   (any venv with tensorflow-cpu)
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import numpy as np  # noqa: E402
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

rng = np.random.RandomState(11)


def floats(*shape):
    return rng.uniform(-1, 1, size=shape).astype(np.float32)


def tensor_json(a):
    return {"shape": list(a.shape), "dtype": str(a.dtype), "values": a.reshape(-1).tolist()}


CASES = [
    ("global_average_pooling2d", layers.GlobalAveragePooling2D(), [floats(2, 3, 4, 5)]),
    ("global_average_pooling2d_keepdims", layers.GlobalAveragePooling2D(keepdims=True), [floats(2, 3, 2, 4)]),
    ("global_max_pooling2d", layers.GlobalMaxPooling2D(), [floats(2, 3, 4, 5)]),
    ("embedding", layers.Embedding(7, 3), [rng.randint(0, 7, size=(2, 5)).astype(np.int32)]),
    ("layer_normalization", layers.LayerNormalization(), [floats(3, 6) * 3 + 1]),
    ("layer_normalization_rank3_no_center", layers.LayerNormalization(epsilon=1e-5, center=False), [floats(2, 3, 4)]),
    ("rescaling", layers.Rescaling(1.0 / 255, offset=-1.0), [rng.randint(0, 256, size=(2, 4)).astype(np.float32)]),
    ("add", layers.Add(), [floats(2, 3), floats(2, 3), floats(2, 3)]),
    ("concatenate", layers.Concatenate(), [floats(2, 3), floats(2, 2)]),
    ("concatenate_axis1", layers.Concatenate(axis=1), [floats(2, 2, 3), floats(2, 1, 3)]),
    ("average_pooling2d", layers.AveragePooling2D(2), [floats(1, 4, 4, 2)]),
    ("activation_tanh", layers.Activation("tanh"), [floats(2, 5)]),
]

# Cases added later draw from their own generator, so that the values above (inputs, then weights) stay as they were.
rng_later = np.random.RandomState(12)


def later_floats(*shape):
    return rng_later.uniform(-1, 1, size=shape).astype(np.float32)


CASES += [
    ("up_sampling2d", layers.UpSampling2D(2), [later_floats(2, 3, 2, 3)]),
    ("up_sampling2d_bilinear", layers.UpSampling2D((2, 3), interpolation="bilinear"), [later_floats(1, 3, 4, 2)]),
]

# Conv1D's inputs, from a generator of their own too; its rows also hold gradients (below).
rng_conv1d = np.random.RandomState(13)


def conv1d_floats(*shape):
    return rng_conv1d.uniform(-1, 1, size=shape).astype(np.float32)


CASES += [
    ("conv1d", layers.Conv1D(4, 3, strides=2, activation="relu"), [conv1d_floats(2, 9, 3)]),
    ("conv1d_same", layers.Conv1D(3, 4, strides=2, padding="same"), [conv1d_floats(2, 7, 2)]),
    ("conv1d_causal", layers.Conv1D(2, 3, padding="causal", use_bias=False, activation="tanh"),
     [conv1d_floats(1, 6, 3)]),
]

# The 1-D poolings' inputs, from a generator of their own; their rows hold gradients too.
rng_pooling1d = np.random.RandomState(15)


def pooling1d_floats(*shape):
    return rng_pooling1d.uniform(-1, 1, size=shape).astype(np.float32)


POOLING1D_CASES = [
    ("max_pooling1d", layers.MaxPooling1D(), [pooling1d_floats(2, 7, 3)]),
    ("max_pooling1d_same", layers.MaxPooling1D(3, strides=2, padding="same"), [pooling1d_floats(2, 8, 2)]),
    ("max_pooling1d_strides1", layers.MaxPooling1D(pool_size=3, strides=1), [pooling1d_floats(1, 6, 2)]),
    ("average_pooling1d", layers.AveragePooling1D(3, strides=1), [pooling1d_floats(2, 6, 3)]),
    ("average_pooling1d_same", layers.AveragePooling1D(2, padding="same"), [pooling1d_floats(1, 7, 2)]),
    ("average_pooling1d_same_strides3", layers.AveragePooling1D(4, strides=3, padding="same"),
     [pooling1d_floats(2, 9, 2)]),
    ("global_average_pooling1d", layers.GlobalAveragePooling1D(), [pooling1d_floats(2, 5, 3)]),
    ("global_average_pooling1d_keepdims", layers.GlobalAveragePooling1D(keepdims=True), [pooling1d_floats(2, 4, 3)]),
    ("global_max_pooling1d", layers.GlobalMaxPooling1D(), [pooling1d_floats(2, 5, 3)]),
    ("global_max_pooling1d_keepdims", layers.GlobalMaxPooling1D(keepdims=True), [pooling1d_floats(2, 4, 3)]),
]
CASES += POOLING1D_CASES

# Rows that also hold the gradients of sum(y * upstream) with respect to the input and each weight (TF's
# GradientTape), the upstream gradient drawn from a generator of its own.
WITH_GRADIENTS = {"conv1d", "conv1d_same", "conv1d_causal"} | {name for name, _, _ in POOLING1D_CASES}
rng_upstream = np.random.RandomState(14)


def gradients_json(layer, x, y_shape):
    upstream = rng_upstream.uniform(-1, 1, size=y_shape).astype(np.float32)
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(layer(x) * upstream)
    grads = tape.gradient(loss, [x] + list(layer.trainable_weights))
    return {"upstream": tensor_json(upstream), "input_gradients": [tensor_json(grads[0].numpy())],
            "weight_gradients": [tensor_json(g.numpy()) for g in grads[1:]]}


def main():
    out = []
    for name, layer, inputs in CASES:
        x = inputs if len(inputs) > 1 else inputs[0]
        layer.build([i.shape for i in inputs] if len(inputs) > 1 else inputs[0].shape)
        weights = []
        for w in layer.weights:  # random values, so gamma and beta are not the trivial ones and zeros
            value = floats(*w.shape)
            w.assign(value)
            weights.append({"name": w.path, **tensor_json(value)})
        y = np.asarray(layer(x))
        row = {"name": name, "class_name": type(layer).__name__, "config": layer.get_config(),
               "inputs": [tensor_json(i) for i in inputs], "weights": weights, "output": tensor_json(y)}
        if name in WITH_GRADIENTS:
            row.update(gradients_json(layer, inputs[0], y.shape))
        out.append(row)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers_golden.json")
    with open(path, "w") as f:
        json.dump({"keras_version": keras.__version__, "layers": out}, f, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
