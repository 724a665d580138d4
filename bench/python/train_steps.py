"""The tutorial CNN trained from Python for a fixed number of steps, as `lockstep train --model tutorial_cnn`
trains it from C++: fit (--loop fit) or a custom loop of strategy.run + GradientTape + apply_gradients
(--loop ctl). Prints one JSON object with samples/s over the training steps (data loading excluded).

  python3 train_steps.py --loop fit|ctl --steps N --batch-size B [--tensorflow]
"""
import argparse
import importlib
import json
import time

import numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("--loop", choices=["fit", "ctl"], default="fit")
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--tensorflow", action="store_true", help="run on TensorFlow instead of lockstep")
args = parser.parse_args()
tf = importlib.import_module("tensorflow" if args.tensorflow else "lockstep")
tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)

(x, y), _ = tf.keras.datasets.fashion_mnist.load_data()
x = (x / np.float32(255)).astype(np.float32)
y = y.astype(np.int64)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(60000, seed=1).repeat().batch(args.batch_size)

model = tf.keras.Sequential([
    tf.keras.Input(shape=(28, 28)),
    tf.keras.layers.Reshape(target_shape=(28, 28, 1)),
    tf.keras.layers.Conv2D(32, 3, activation="relu"),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(128, activation="relu"),
    tf.keras.layers.Dense(10),
])
optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

if args.loop == "fit":
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
    model.fit(dataset, epochs=1, steps_per_epoch=5, verbose=0)  # warm-up: first-call allocations, kernels' plans
    start = time.perf_counter()
    model.fit(dataset, epochs=1, steps_per_epoch=args.steps, verbose=0)
    seconds = time.perf_counter() - start
else:
    strategy = tf.distribute.get_strategy()
    per_example = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                reduction=tf.keras.losses.Reduction.NONE)

    def replica_step(batch):
        images, labels = batch
        with tf.GradientTape() as tape:
            logits = model(images, training=True)
            value = tf.nn.compute_average_loss(per_example(labels, logits))
        grads = tape.gradient(value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return value

    @tf.function
    def step(batch):
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_step, args=(batch,)), axis=None)

    iterator = iter(dataset)
    for _ in range(5):
        step(next(iterator))
    start = time.perf_counter()
    for _ in range(args.steps):
        step(next(iterator))
    seconds = time.perf_counter() - start
print(json.dumps({"samples_per_second": args.steps * args.batch_size / seconds, "seconds": seconds}))
