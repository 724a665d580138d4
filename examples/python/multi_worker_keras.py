"""Keras fit under MultiWorkerMirroredStrategy: MNIST, the tutorial CNN, BackupAndRestore for fault tolerance, and
a saved model that every worker loads back (the multi-worker Keras tutorial of tf.distribute, for lockstep).

Start one process per worker with its TF_CONFIG, or `lockstep launch -n 2 -- python3 multi_worker_keras.py`;
without TF_CONFIG it trains on one worker. Runs unchanged on TensorFlow: tensorflow/multi_worker_keras.py differs
in its import line only.
Environment: EPOCHS (default 3), STEPS_PER_EPOCH (default 70), OUTPUT_DIR (default: a new temporary directory).
"""
import json
import os
import tempfile

import numpy as np
import lockstep as tf

EPOCHS = int(os.environ.get("EPOCHS", "3"))
STEPS_PER_EPOCH = int(os.environ.get("STEPS_PER_EPOCH", "70"))
OUTPUT_DIR = os.environ.get("OUTPUT_DIR") or tempfile.mkdtemp(prefix="multi_worker_keras_")


def mnist_dataset(batch_size):
    (x_train, y_train), _ = tf.keras.datasets.mnist.load_data()
    x_train = x_train / np.float32(255)  # uint8 [0, 255] -> float32 [0, 1]
    y_train = y_train.astype(np.int64)
    return tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(60000).repeat().batch(batch_size)


def build_and_compile_cnn_model():
    model = tf.keras.Sequential([
        tf.keras.Input(shape=(28, 28)),
        tf.keras.layers.Reshape(target_shape=(28, 28, 1)),
        tf.keras.layers.Conv2D(32, 3, activation="relu"),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=tf.keras.optimizers.SGD(learning_rate=0.001), metrics=["accuracy"])
    return model


tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
num_workers = len(tf_config.get("cluster", {}).get("worker", [])) or 1

communication = tf.distribute.experimental.CommunicationOptions(
    implementation=tf.distribute.experimental.CommunicationImplementation.RING)
strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=communication)
global_batch_size = 64 * num_workers

# Every worker reads the whole (shuffled) dataset rather than a shard of it, as the tutorial sets it.
options = tf.data.Options()
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
dataset = mnist_dataset(global_batch_size).with_options(options)

with strategy.scope():
    model = build_and_compile_cnn_model()

# A worker that dies mid-epoch is restarted and the job resumes from the last epoch's backup.
callbacks = [tf.keras.callbacks.BackupAndRestore(backup_dir=os.path.join(OUTPUT_DIR, "backup"))]
history = model.fit(dataset, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH, callbacks=callbacks)


def is_chief(task_type, task_id):
    return task_type is None or task_type == "chief" or (task_type == "worker" and task_id == 0)


def write_filepath(filepath, task_type, task_id):
    """The chief writes to filepath; every other worker to a directory of its own, removed after saving."""
    dirpath, base = os.path.dirname(filepath), os.path.basename(filepath)
    if not is_chief(task_type, task_id):
        dirpath = os.path.join(dirpath, f"workertemp_{task_id}")
        tf.io.gfile.makedirs(dirpath)
    return os.path.join(dirpath, base)


task_type, task_id = strategy.cluster_resolver.task_type, strategy.cluster_resolver.task_id
model_path = os.path.join(OUTPUT_DIR, "model.keras")
write_path = write_filepath(model_path, task_type, task_id)
model.save(write_path)
if not is_chief(task_type, task_id):
    tf.io.gfile.rmtree(os.path.dirname(write_path))

# A checkpoint of the model beside it, kept by a CheckpointManager, and restored from the chief's directory.
checkpoint_dir = os.path.join(OUTPUT_DIR, "ckpt")
checkpoint = tf.train.Checkpoint(model=model)
write_checkpoint_dir = write_filepath(checkpoint_dir, task_type, task_id)
manager = tf.train.CheckpointManager(checkpoint, directory=write_checkpoint_dir, max_to_keep=1)
manager.save()
if not is_chief(task_type, task_id):
    tf.io.gfile.rmtree(write_checkpoint_dir)
checkpoint.restore(tf.train.latest_checkpoint(checkpoint_dir))

loaded = tf.keras.models.load_model(model_path)
(_, _), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
loss, accuracy = loaded.evaluate(x_test / np.float32(255), y_test.astype(np.int64), verbose=0)
print(f"final accuracy: {accuracy:.4f}")
