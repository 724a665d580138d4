"""Makes tests/golden/functional_golden.json: three Keras functional models as model.to_json() writes them,
their weights (model.weights order, random so that biases and LayerNormalization's gamma/beta matter), fixed
inputs and Keras' predictions. functional_golden_test.cc rebuilds each with keras::models::model_from_json,
sets the weights, predicts the same, and compares its own config with Keras'.

  skip_cnn:   a CNN with a skip connection (Add) and GlobalAveragePooling2D
  text:       int32 tokens -> Embedding -> LayerNormalization -> Dense classifier
  two_inputs: two inputs, a shared Dense, Add and Concatenate, two outputs

Generated with TensorFlow 2.21.0 / Keras 3.15.1. Rerun from the source root:
    /work/tfvenv/bin/python tests/golden/make_functional_golden.py   (any venv with tensorflow-cpu)
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import layers  # noqa: E402

rng = np.random.RandomState(5)


def skip_cnn():
    inputs = keras.Input((8, 8, 3), name="image")
    x = layers.Rescaling(2.0, offset=-1.0)(inputs)
    a = layers.Conv2D(4, 3, padding="same", activation="relu")(x)
    b = layers.Conv2D(4, 3, padding="same")(a)
    x = layers.Add()([a, b])
    x = layers.Activation("relu")(x)
    x = layers.AveragePooling2D(2)(x)
    x = layers.GlobalAveragePooling2D()(x)
    outputs = layers.Dense(3)(x)
    return keras.Model(inputs, outputs, name="skip_cnn"), [rng.uniform(0, 1, (2, 8, 8, 3)).astype(np.float32)]


def text():
    inputs = keras.Input((6,), dtype="int32", name="tokens")
    x = layers.Embedding(20, 8)(inputs)
    x = layers.LayerNormalization()(x)
    x = layers.Flatten()(x)
    x = layers.Dense(4, activation="relu")(x)
    x = layers.Dropout(0.3)(x)
    outputs = layers.Dense(2)(x)
    return keras.Model(inputs, outputs, name="text"), [rng.randint(0, 20, (3, 6)).astype(np.int32)]


def two_inputs():
    a = keras.Input((4,), name="a")
    b = keras.Input((3,), name="b")
    xa = layers.Dense(5, activation="relu")(a)
    xb = layers.Dense(5, activation="tanh")(b)
    shared = layers.Dense(5, name="shared")
    s = layers.Add()([shared(xa), shared(xb)])
    c = layers.Concatenate()([s, xa])
    out1 = layers.Dense(2, name="out1")(c)
    out2 = layers.Dense(1, name="out2")(xb)
    model = keras.Model([a, b], [out1, out2], name="two_inputs")
    return model, [rng.uniform(-1, 1, (2, 4)).astype(np.float32), rng.uniform(-1, 1, (2, 3)).astype(np.float32)]


def tensor_json(a):
    a = np.asarray(a)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "values": a.reshape(-1).tolist()}


def main():
    keras.utils.set_random_seed(3)
    out = []
    for make in (skip_cnn, text, two_inputs):
        keras.backend.clear_session()
        model, inputs = make()
        weights = []
        for w in model.weights:
            value = rng.uniform(-0.5, 0.5, w.shape).astype(np.float32)
            w.assign(value)
            weights.append({"name": w.path, **tensor_json(value)})
        predictions = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
        if not isinstance(predictions, list):
            predictions = [predictions]
        out.append({"name": model.name, "json": model.to_json(), "layers": [l.name for l in model.layers],
                    "weights": weights, "inputs": [tensor_json(i) for i in inputs],
                    "outputs": [tensor_json(p) for p in predictions]})
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "functional_golden.json")
    with open(path, "w") as f:
        json.dump({"keras_version": keras.__version__, "models": out}, f, indent=1)
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
