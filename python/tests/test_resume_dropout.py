"""A Python program with Dropout killed mid-run under `lockstep launch --max-restarts` ends with bitwise the weights
of a run that was never killed: fit with BackupAndRestore and the custom loop with a CheckpointManager (model,
optimizer, the distributed iterator), on 2 and 3 workers, killing the chief and a non-chief. Every worker's Dropout
stream must come back, not only the chief's."""
import os
import subprocess
import sys

import pytest

from conftest import BIN_DIR, REPO

PYTHON = str(REPO / "build" / "venv" / "bin" / "python3") if (REPO / "build" / "venv").exists() else sys.executable

PROGRAM = """
import hashlib, os, signal
import numpy as np
import lockstep as tf

KILL_TASK, KILL_STEP, MARKER = int(os.environ["KILL_TASK"]), int(os.environ["KILL_STEP"]), os.environ["KILL_MARKER"]
BACKUP, LOOP, MODEL = os.environ["BACKUP_DIR"], os.environ["LOOP"], os.environ["MODEL"]

strategy = tf.distribute.MultiWorkerMirroredStrategy()
task = strategy.cluster_resolver.task_id


def maybe_die(step):
    # The first run only: the restarted one finds the marker.
    if task == KILL_TASK and step == KILL_STEP and not os.path.exists(MARKER):
        open(MARKER, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)


tf.keras.utils.set_random_seed(1)
rng = np.random.RandomState(0)
x = rng.rand(480, 8, 8, 1).astype("float32")
y = rng.randint(0, 4, 480).astype("int64")
global_batch = 8 * strategy.num_replicas_in_sync
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(480, seed=3).repeat().batch(global_batch)



class Head(tf.keras.layers.Layer):
    # A Python layer holding a Dropout: its stream is found through two levels of tracking.

    def __init__(self):
        super().__init__()
        self.parts = [tf.keras.layers.Dense(16), tf.keras.layers.Dropout(0.5)]

    def call(self, x, training=None):
        return self.parts[1](self.parts[0](x), training=training)


class Subclassed(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.conv = tf.keras.layers.Conv2D(4, 3, activation="relu")
        self.flatten = tf.keras.layers.Flatten()
        self.dropout = tf.keras.layers.Dropout(0.25)
        self.head = Head()
        self.out = tf.keras.layers.Dense(4)

    def call(self, x, training=None):
        return self.out(self.head(self.dropout(self.flatten(self.conv(x)), training=training), training=training))


with strategy.scope():
    if MODEL == "subclass":
        model = Subclassed()
        model.build((None, 8, 8, 1))
    else:
        model = tf.keras.Sequential([tf.keras.Input(shape=(8, 8, 1)), tf.keras.layers.Conv2D(4, 3, activation="relu"),
                                     tf.keras.layers.Flatten(), tf.keras.layers.Dropout(0.25),
                                     tf.keras.layers.Dense(16), tf.keras.layers.Dropout(0.5),
                                     tf.keras.layers.Dense(4)])

if LOOP == "fit":
    class Killer(tf.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            maybe_die(int(self.model.optimizer.iterations.numpy()))

    with strategy.scope():
        model.compile(optimizer="adam", metrics=["accuracy"],
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(dataset, epochs=3, steps_per_epoch=6, verbose=0,
              callbacks=[tf.keras.callbacks.BackupAndRestore(BACKUP, save_freq=3), Killer()])
else:
    with strategy.scope():
        optimizer = tf.keras.optimizers.Adam()
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=tf.keras.losses.Reduction.NONE)
    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    step = tf.Variable(0, dtype=tf.int64)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, iterator=iterator, step=step)
    directory = BACKUP if task == 0 else os.path.join(BACKUP, f"worker{task}")  # only the chief's is read
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    manager.restore_or_initialize()

    def train_step(inputs):
        features, labels = inputs
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_object(labels, model(features, training=True)),
                                              global_batch_size=global_batch)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    while int(step.numpy()) < 18:
        strategy.run(train_step, args=(next(iterator),))
        step.assign_add(1)
        if int(step.numpy()) % 3 == 0:
            manager.save()
        maybe_die(int(step.numpy()))

digest = hashlib.sha256(b"".join(np.ascontiguousarray(w).tobytes() for w in model.get_weights())).hexdigest()
print(f"WEIGHTS {task} {digest}", flush=True)
"""


def launch(tmp_path, workers, loop, kill_task, kill_step, tag, model):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    env.update(KILL_TASK=str(kill_task), KILL_STEP=str(kill_step), KILL_MARKER=str(tmp_path / f"{tag}.killed"),
               BACKUP_DIR=str(tmp_path / f"{tag}.backup"), LOOP=loop, MODEL=model, OMP_NUM_THREADS="1")
    r = subprocess.run([str(BIN_DIR / "lockstep"), "launch", "-n", str(workers), "--max-restarts", "2", "--", PYTHON,
                        str(script)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    digests = {}
    for line in r.stdout.splitlines() + r.stderr.splitlines():
        if "WEIGHTS " in line:
            task, digest = line.split("WEIGHTS ", 1)[1].split()
            digests[int(task)] = digest
    assert len(digests) == workers, r.stdout[-3000:] + r.stderr[-3000:]
    assert len(set(digests.values())) == 1, f"the workers' weights differ: {digests}"
    return digests[0], r


@pytest.mark.parametrize("workers, loop, kill_task, kill_step, model", [
    (2, "fit", 0, 8, "sequential"),   # the chief, mid-epoch, 2 steps after a backup
    (2, "ctl", 1, 10, "sequential"),  # the other worker, in the custom loop
    (3, "fit", 2, 13, "sequential"),  # a non-chief of three, in epoch 3
    (3, "ctl", 0, 7, "sequential"),   # the chief of three, one step after a save
    # A subclassed model: its Dropout streams are what its C++ layer tracks (one of them inside a Python layer).
    (2, "fit", 1, 8, "subclass"),
    (2, "ctl", 0, 10, "subclass"),
])
def test_a_killed_job_with_dropout_ends_with_the_weights_of_an_uninterrupted_run(tmp_path, workers, loop, kill_task,
                                                                                 kill_step, model):
    reference, _ = launch(tmp_path, workers, loop, -1, 0, "reference", model)
    resumed, r = launch(tmp_path, workers, loop, kill_task, kill_step, "killed", model)
    assert (tmp_path / "killed.killed").exists(), "the worker was never killed"
    assert "restart" in (r.stdout + r.stderr).lower(), r.stderr[-2000:]
    assert resumed == reference, r.stderr[-3000:]
