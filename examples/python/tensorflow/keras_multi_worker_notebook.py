"""The multi-worker Keras notebook, as one program: a single-worker fit, the same model under
tf.distribute.experimental.MultiWorkerMirroredStrategy with a dataset whose auto-sharding is off, a
ModelCheckpoint, and a save/restore through Checkpoint and CheckpointManager (for lockstep).

Runs unchanged on TensorFlow: tensorflow/keras_multi_worker_notebook.py differs in its import line only.
Environment: EPOCHS (default 3), STEPS_PER_EPOCH (default 70), OUTPUT_DIR (default: a new temporary directory).
"""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

EPOCHS = int(os.environ.get("EPOCHS", "3"))
STEPS_PER_EPOCH = int(os.environ.get("STEPS_PER_EPOCH", "70"))
OUTPUT_DIR = os.environ.get("OUTPUT_DIR") or tempfile.mkdtemp(prefix="keras_notebook_")


def mnist_dataset(batch_size):
    (x_train, y_train), _ = tf.keras.datasets.mnist.load_data()
    x_train = x_train / 255.0
    y_train = y_train.astype(np.int64)
    return tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(60000).repeat().batch(batch_size)


def create_model():
    model = tf.keras.Sequential([
        tf.keras.Input(shape=[28, 28]),
        tf.keras.layers.Reshape(target_shape=[28, 28, 1]),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.001),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


per_worker_batch_size = 64
single_worker_model = create_model()
single_worker_model.fit(mnist_dataset(per_worker_batch_size), epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH)

strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy(
    communication=tf.distribute.experimental.CollectiveCommunication.AUTO)
tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
num_workers = len(tf_config.get("cluster", {}).get("worker", [])) or 1
global_batch_size = per_worker_batch_size * num_workers  # batch() takes the global batch size
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
multi_worker_dataset = mnist_dataset(global_batch_size).with_options(options)

callbacks = [tf.keras.callbacks.ModelCheckpoint(filepath=os.path.join(OUTPUT_DIR, "training", "ckpt.keras"))]
with strategy.scope():
    multi_worker_model = create_model()
history = multi_worker_model.fit(multi_worker_dataset, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH,
                                 callbacks=callbacks)

task_type, task_id = strategy.cluster_resolver.task_type, strategy.cluster_resolver.task_id
chief = task_type is None or (task_type == "worker" and task_id == 0)
model_dir = os.path.join(OUTPUT_DIR, "model_dir")
path = model_dir if chief else os.path.join(model_dir, f"worker_tmp_{task_id}")
checkpoint = tf.train.Checkpoint(model=multi_worker_model)
manager = tf.train.CheckpointManager(checkpoint, directory=path, max_to_keep=5)
manager.save()
status = checkpoint.restore(tf.train.latest_checkpoint(model_dir))
print(f"final accuracy: {history.history['accuracy'][-1]:.4f}")
