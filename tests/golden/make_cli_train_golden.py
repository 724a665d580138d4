"""Makes tests/golden/cli_train/: what a TensorFlow user hands `lockstep train --model FILE --data tfrecord:...`.

  classifier.keras            a Keras 3 Sequential classifier built, compiled (Adam, sparse categorical
                              cross-entropy from logits, accuracy) and trained for one epoch in TensorFlow
  skip_classifier.keras       the same task as a functional model with a skip connection (Add)
  train-0000N-of-00002.tfrecord  600 tf.train.Example records in two shards: "x" (8 floats), "label" (int64)
  classifier.json             classifier.keras's model.to_json(), for --model FILE.json

The task is learnable: x ~ N(0, 1)^8 from NumPy's seeded generator, label = argmax(x @ W) for a fixed W (3
classes), so a few epochs bring the loss well down. Generated with TensorFlow 2.21.0 / Keras 3.15.1 (the venv
that scripts/python-venv makes has both):
    build/venv/bin/python tests/golden/make_cli_train_golden.py
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf
import keras

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cli_train")
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)
n, d, classes = 600, 8, 3
x = rng.standard_normal((n, d)).astype(np.float32)
w = rng.standard_normal((d, classes)).astype(np.float32)
y = np.argmax(x @ w, axis=1).astype(np.int64)

for shard in range(2):
    path = os.path.join(out, f"train-{shard:05d}-of-00002.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for i in range(shard, n, 2):
            ex = tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=x[i])),
                "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[y[i]])),
            }))
            writer.write(ex.SerializeToString())

keras.utils.set_random_seed(1)


def compile_and_train(model):
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    model.fit(x[:64], y[:64], batch_size=32, epochs=1, verbose=0)  # trained in TF: the optimizer has state
    return model


seq = compile_and_train(keras.Sequential([keras.Input(shape=(d,)), keras.layers.Dense(32, activation="relu"),
                                          keras.layers.Dense(classes)]))
seq.save(os.path.join(out, "classifier.keras"))
with open(os.path.join(out, "classifier.json"), "w") as f:
    f.write(seq.to_json())

inputs = keras.Input(shape=(d,))
h = keras.layers.Dense(16, activation="relu")(inputs)
h = keras.layers.Add()([h, keras.layers.Dense(16)(inputs)])
skip = compile_and_train(keras.Model(inputs, keras.layers.Dense(classes)(h)))
skip.save(os.path.join(out, "skip_classifier.keras"))
