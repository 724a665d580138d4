"""A custom training loop under MirroredStrategy: Fashion-MNIST, a small CNN, GradientTape, a checkpoint and a
restore (the custom-training tutorial of tf.distribute, written for lockstep).

Runs unchanged on TensorFlow: tensorflow/mirrored_custom_training.py differs in its import line only.
Environment: EPOCHS (default 10), OUTPUT_DIR (default: a new temporary directory).
"""
import os
import tempfile

import numpy as np
import tensorflow as tf

EPOCHS = int(os.environ.get("EPOCHS", "10"))
OUTPUT_DIR = os.environ.get("OUTPUT_DIR") or tempfile.mkdtemp(prefix="mirrored_ctl_")

(train_images, train_labels), (test_images, test_labels) = tf.keras.datasets.fashion_mnist.load_data()
# One channel for Conv2D, values in [0, 1].
train_images = (train_images[..., None] / np.float32(255)).astype(np.float32)
test_images = (test_images[..., None] / np.float32(255)).astype(np.float32)

strategy = tf.distribute.MirroredStrategy()
print(f"replicas in sync: {strategy.num_replicas_in_sync}")

BATCH_PER_REPLICA = 64
GLOBAL_BATCH = BATCH_PER_REPLICA * strategy.num_replicas_in_sync
train_data = tf.data.Dataset.from_tensor_slices((train_images, train_labels)).shuffle(len(train_images)).batch(
    GLOBAL_BATCH)
test_data = tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(GLOBAL_BATCH)
train_dist = strategy.experimental_distribute_dataset(train_data)
test_dist = strategy.experimental_distribute_dataset(test_data)


def make_model():
    l2 = tf.keras.regularizers.L2(1e-5)
    return tf.keras.Sequential([
        tf.keras.layers.Conv2D(32, 3, activation="relu", kernel_regularizer=l2),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Conv2D(64, 3, activation="relu", kernel_regularizer=l2),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu", kernel_regularizer=l2),
        tf.keras.layers.Dense(10, kernel_regularizer=l2),
    ])


with strategy.scope():
    # Per-example losses: the average over the global batch is taken by compute_average_loss, so that the
    # replicas' gradients sum to the gradient of the mean.
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                            reduction=tf.keras.losses.Reduction.NONE)

    def batch_loss(labels, logits, regularization):
        loss = tf.nn.compute_average_loss(loss_fn(labels, logits))
        if regularization:
            loss += tf.nn.scale_regularization_loss(tf.add_n(regularization))
        return loss

    test_loss = tf.keras.metrics.Mean(name="test_loss")
    train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
    test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="test_accuracy")
    model = make_model()
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.001)
    checkpoint = tf.train.Checkpoint(optimizer=optimizer, model=model)


def train_step(batch):
    images, labels = batch
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = batch_loss(labels, logits, model.losses)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    train_accuracy.update_state(labels, logits)
    return loss


def test_step(batch):
    images, labels = batch
    logits = model(images, training=False)
    test_loss.update_state(loss_fn(labels, logits))
    test_accuracy.update_state(labels, logits)


@tf.function
def distributed_train_step(batch):
    losses = strategy.run(train_step, args=(batch,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


@tf.function
def distributed_test_step(batch):
    return strategy.run(test_step, args=(batch,))


for epoch in range(EPOCHS):
    total, batches = 0.0, 0
    for batch in train_dist:
        total += distributed_train_step(batch)
        batches += 1
    for batch in test_dist:
        distributed_test_step(batch)
    if epoch % 2 == 0:
        checkpoint.save(os.path.join(OUTPUT_DIR, "ckpt"))
    print(f"Epoch {epoch + 1}, Loss: {float(total) / batches:.4f}, Accuracy: {train_accuracy.result() * 100:.2f}, "
          f"Test Loss: {test_loss.result():.4f}, Test Accuracy: {test_accuracy.result() * 100:.2f}")
    test_loss.reset_states()
    train_accuracy.reset_states()
    test_accuracy.reset_states()

# Restore the latest checkpoint into a new model without a strategy and evaluate it.
restored_model = make_model()
restored = tf.train.Checkpoint(optimizer=tf.keras.optimizers.Adam(), model=restored_model)
restored.restore(tf.train.latest_checkpoint(OUTPUT_DIR)).expect_partial()
eval_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="eval_accuracy")
for images, labels in tf.data.Dataset.from_tensor_slices((test_images, test_labels)).batch(GLOBAL_BATCH):
    eval_accuracy(labels, restored_model(images, training=False))
print(f"final accuracy: {float(eval_accuracy.result()):.4f}")
