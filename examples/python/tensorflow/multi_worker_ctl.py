"""A custom training loop under MultiWorkerMirroredStrategy: MNIST, a regularized CNN, a dataset made per input
pipeline, GradientTape, and a CheckpointManager that lets a restarted job continue from the last epoch (the
custom-training-loop multi-worker tutorial of tf.distribute, for lockstep).

Start one process per worker with its TF_CONFIG, or `lockstep launch -n 2 -- python3 multi_worker_ctl.py`.
Runs unchanged on TensorFlow: tensorflow/multi_worker_ctl.py differs in its import line only.
Environment: EPOCHS (default 3), STEPS_PER_EPOCH (default 70), OUTPUT_DIR (default: a new temporary directory).
"""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

EPOCHS = int(os.environ.get("EPOCHS", "3"))
STEPS_PER_EPOCH = int(os.environ.get("STEPS_PER_EPOCH", "70"))
OUTPUT_DIR = os.environ.get("OUTPUT_DIR") or tempfile.mkdtemp(prefix="multi_worker_ctl_")

tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
num_workers = len(tf_config.get("cluster", {}).get("worker", [])) or 1
global_batch_size = 64 * num_workers


def mnist_dataset():
    (x_train, y_train), _ = tf.keras.datasets.mnist.load_data()
    x_train = x_train / np.float32(255)
    y_train = y_train.astype(np.int64)
    return tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(60000)


def dataset_fn(input_context):
    """One input pipeline's share: its shard of the examples, in batches of its replicas' size."""
    batch_size = input_context.get_per_replica_batch_size(global_batch_size)
    dataset = mnist_dataset().shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return dataset.batch(batch_size).repeat()


def build_cnn_model():
    l2 = tf.keras.regularizers.L2(1e-5)
    return tf.keras.Sequential([
        tf.keras.Input(shape=(28, 28)),
        tf.keras.layers.Reshape(target_shape=(28, 28, 1)),
        tf.keras.layers.Conv2D(32, 3, activation="relu", kernel_regularizer=l2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(128, activation="relu", kernel_regularizer=l2),
        tf.keras.layers.Dense(10, kernel_regularizer=l2),
    ])


strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = build_cnn_model()
    dist_dataset = strategy.distribute_datasets_from_function(dataset_fn)
    optimizer = tf.keras.optimizers.RMSprop(learning_rate=0.001)
    train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")


@tf.function
def train_step(iterator):
    def replica_step(batch):
        x, y = batch
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            per_example = tf.keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction=tf.keras.losses.Reduction.NONE)(y, logits)
            loss = tf.nn.compute_average_loss(per_example)
            if model.losses:
                loss += tf.nn.scale_regularization_loss(tf.add_n(model.losses))
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_accuracy.update_state(y, logits)
        return loss

    per_replica = strategy.run(replica_step, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)


def is_chief(task_type, task_id, cluster_spec):
    return (task_type is None or task_type == "chief"
            or (task_type == "worker" and task_id == 0 and "chief" not in cluster_spec.as_dict()))


def write_dir(dirpath, task_type, task_id, cluster_spec):
    """The chief writes checkpoints to dirpath; every other worker to a directory of its own it removes after."""
    if is_chief(task_type, task_id, cluster_spec):
        return dirpath
    temp = os.path.join(os.path.dirname(dirpath), f"workertemp_{task_id}", os.path.basename(dirpath))
    tf.io.gfile.makedirs(temp)
    return temp


epoch = tf.Variable(initial_value=tf.constant(0, dtype=tf.dtypes.int64), name="epoch")
step_in_epoch = tf.Variable(initial_value=tf.constant(0, dtype=tf.dtypes.int64), name="step_in_epoch")
task_type, task_id = strategy.cluster_resolver.task_type, strategy.cluster_resolver.task_id
cluster_spec = tf.train.ClusterSpec(tf_config.get("cluster", {}))
checkpoint_dir = os.path.join(OUTPUT_DIR, "ckpt")
checkpoint = tf.train.Checkpoint(model=model, epoch=epoch, step_in_epoch=step_in_epoch)
my_checkpoint_dir = write_dir(checkpoint_dir, task_type, task_id, cluster_spec)
manager = tf.train.CheckpointManager(checkpoint, directory=my_checkpoint_dir, max_to_keep=1)

latest = tf.train.latest_checkpoint(checkpoint_dir)
if latest:
    checkpoint.restore(latest)

while epoch.numpy() < EPOCHS:
    iterator = iter(dist_dataset)
    total_loss, batches = 0.0, 0
    while step_in_epoch.numpy() < STEPS_PER_EPOCH:
        total_loss += train_step(iterator)
        batches += 1
        step_in_epoch.assign_add(1)
    print(f"Epoch: {epoch.numpy()}, accuracy: {train_accuracy.result():f}, train_loss: {total_loss / batches:f}.")
    final_accuracy = float(train_accuracy.result())
    train_accuracy.reset_states()
    manager.save()
    if not is_chief(task_type, task_id, cluster_spec):
        tf.io.gfile.rmtree(my_checkpoint_dir)
    epoch.assign_add(1)
    step_in_epoch.assign(0)

print(f"final accuracy: {final_accuracy:.4f}")
