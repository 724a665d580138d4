"""tf.train from Python: Checkpoint round trips bit for bit, load statuses, CheckpointManager's numbering and
pruning, the errors of missing, corrupted and mismatched checkpoints, and agreement with TensorFlow's index file."""
import threading

import numpy as np
import pytest
from conftest import tensorflow_or_skip


def bits(array):
    """The bytes of an array, so that comparisons are bit for bit (NaN and -0.0 included)."""
    array = np.ascontiguousarray(array)
    return array.dtype.str, array.shape, array.tobytes()


def variables(tf, seed):
    rng = np.random.default_rng(seed)
    weights = rng.standard_normal((3, 4)).astype(np.float32)
    weights[0, 0], weights[0, 1] = np.nan, -0.0
    return {
        "weights": tf.Variable(weights),
        "bias": tf.Variable(rng.standard_normal(4)),  # float64
        "count": tf.Variable(int(rng.integers(1 << 40)), dtype=tf.int64),
        "ids": tf.Variable(rng.integers(-100, 100, size=5).astype(np.int32)),
    }


def test_save_and_restore_are_bit_for_bit(tf, tmp_path):
    saved = variables(tf, 1)
    expected = {name: bits(v.numpy()) for name, v in saved.items()}
    checkpoint = tf.train.Checkpoint(**saved)
    path = checkpoint.save(str(tmp_path / "ckpt"))
    assert path == str(tmp_path / "ckpt-1")
    assert int(checkpoint.save_counter) == 1

    for name, v in saved.items():
        v.assign(tf.zeros_like(v))
    checkpoint.restore(path).assert_consumed()
    assert {name: bits(v.numpy()) for name, v in saved.items()} == expected

    # A fresh checkpoint over other variables of the same shapes takes the values too.
    fresh = variables(tf, 2)
    status = tf.train.Checkpoint(**fresh).restore(path)
    status.assert_consumed().assert_existing_objects_matched()
    assert {name: bits(v.numpy()) for name, v in fresh.items()} == expected


def test_nested_checkpoints_and_root(tf, tmp_path):
    outer_v, inner_v, deep_v = tf.Variable(1.0), tf.Variable([1.0, 2.0]), tf.Variable(7, dtype=tf.int64)
    inner = tf.train.Checkpoint(v=inner_v, deeper=tf.train.Checkpoint(x=deep_v))
    checkpoint = tf.train.Checkpoint(root=outer_v, inner=inner)
    path = checkpoint.write(str(tmp_path / "nested"))
    assert path == str(tmp_path / "nested")
    assert int(checkpoint.save_counter) == 0  # write() does not count

    outer_v.assign(0.0), inner_v.assign([0.0, 0.0]), deep_v.assign(0)
    checkpoint.read(path).assert_consumed()
    assert outer_v.numpy() == 1.0 and list(inner_v.numpy()) == [1.0, 2.0] and deep_v.numpy() == 7
    assert checkpoint.inner is inner and checkpoint.root is outer_v


def test_attributes_are_objects_until_the_first_save(tf, tmp_path):
    checkpoint = tf.train.Checkpoint(a=tf.Variable(1.0))
    checkpoint.b = tf.Variable(2.0)
    checkpoint.note = "not saved"  # plain attributes stay plain
    path = checkpoint.save(str(tmp_path / "c"))
    checkpoint.b.assign(5.0)
    checkpoint.restore(path).assert_consumed()
    assert checkpoint.b.numpy() == 2.0
    with pytest.raises(ValueError, match="cannot set object 'c' after the checkpoint was saved"):
        checkpoint.c = tf.Variable(3.0)
    with pytest.raises(ValueError, match="expecting v to be a trackable object"):
        tf.train.Checkpoint(v=5)


def test_load_status_assertions(tf, tmp_path):
    a, b = tf.Variable(1.0), tf.Variable(2.0)
    path = tf.train.Checkpoint(a=a, b=b).save(str(tmp_path / "ab"))

    status = tf.train.Checkpoint(a=tf.Variable(0.0)).restore(path)
    status.assert_existing_objects_matched()  # an unused entry is allowed here
    with pytest.raises(AssertionError, match=r"holds value\(s\) nothing restored: b.*expect_partial"):
        status.assert_consumed()
    status.expect_partial()

    extra = tf.train.Checkpoint(a=tf.Variable(0.0), b=tf.Variable(0.0), c=tf.Variable(0.0)).restore(path)
    with pytest.raises(AssertionError, match="has nothing for object\\(s\\) c"):
        extra.assert_existing_objects_matched()
    extra.expect_partial()

    nothing = tf.train.Checkpoint(a=a).restore(None)  # TF's restore(None): nothing to restore
    with pytest.raises(AssertionError, match="nothing was restored"):
        nothing.assert_consumed()
    nothing.expect_partial()


def test_save_counter_follows_restore_not_read(tf, tmp_path):
    v = tf.Variable(1.0)
    checkpoint = tf.train.Checkpoint(v=v)
    for _ in range(3):
        last = checkpoint.save(str(tmp_path / "s"))
    assert last.endswith("s-3")
    other = tf.train.Checkpoint(v=tf.Variable(0.0))
    other.read(last).assert_consumed()
    assert int(other.save_counter) == 0
    other.restore(last).assert_consumed()
    assert int(other.save_counter) == 3
    assert other.save(str(tmp_path / "s")).endswith("s-4")


def test_missing_checkpoint_raises_not_found(tf, tmp_path):
    missing = str(tmp_path / "nothere-1")
    with pytest.raises(tf.errors.NotFoundError) as e:
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(missing)
    message = str(e.value)
    assert missing in message and "\n" not in message
    with pytest.raises(tf.errors.OpError):
        tf.train.Checkpoint(v=tf.Variable(1.0)).read(missing)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_corrupted_checkpoint_raises_data_loss(tf, tmp_path, damage):
    path = tf.train.Checkpoint(v=tf.Variable(np.arange(100, dtype=np.float32))).save(str(tmp_path / "c"))
    file = tmp_path / "c-1.safetensors"
    data = file.read_bytes()
    file.write_bytes({"truncated": data[: len(data) // 2], "garbage": b"\x01" * len(data), "empty": b""}[damage])
    with pytest.raises(tf.errors.DataLossError) as e:
        tf.train.Checkpoint(v=tf.Variable(np.zeros(100, dtype=np.float32))).restore(path)
    assert str(file) in str(e.value) and "\n" not in str(e.value)


def test_shape_mismatch_raises_value_error(tf, tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable(np.zeros((2, 3), np.float32), name="kernel")).save(str(tmp_path / "c"))
    target = tf.Variable(np.zeros((3, 2), np.float32), name="kernel")
    with pytest.raises(ValueError, match=r"variable 'kernel' has shape \(2, 3\).*but the variable has shape \(3, 2\)"):
        tf.train.Checkpoint(v=target).restore(path)
    assert not target.numpy().any()


def test_manager_keeps_the_newest_max_to_keep(tf, tmp_path):
    v = tf.Variable(0.0)
    checkpoint = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(checkpoint, str(tmp_path), max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.checkpoints == []
    for i in range(1, 5):
        v.assign(float(i))
        assert manager.save() == str(tmp_path / f"ckpt-{i}")
    kept = [str(tmp_path / "ckpt-3"), str(tmp_path / "ckpt-4")]
    assert manager.checkpoints == kept
    assert manager.latest_checkpoint == kept[-1] == tf.train.latest_checkpoint(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "ckpt-3.safetensors", "ckpt-4.safetensors"]

    assert manager.save(checkpoint_number=10) == str(tmp_path / "ckpt-10")
    assert manager.checkpoints == [kept[-1], str(tmp_path / "ckpt-10")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "ckpt-10.safetensors", "ckpt-4.safetensors"]

    # A new manager on the directory finds what the first one kept.
    v.assign(-1.0)
    again = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), str(tmp_path), max_to_keep=2,
                                       checkpoint_name="ckpt")
    assert again.checkpoints == manager.checkpoints
    assert again.restore_or_initialize() == str(tmp_path / "ckpt-10")
    assert v.numpy() == 4.0


def test_manager_without_limit_and_with_its_own_name(tf, tmp_path):
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), str(tmp_path / "d"), None,
                                         checkpoint_name="model")
    paths = [manager.save() for _ in range(7)]
    assert manager.checkpoints == paths and paths[-1] == str(tmp_path / "d" / "model-7")
    with pytest.raises(ValueError, match="positive integer or `None` for `max_to_keep`, got 0"):
        tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), str(tmp_path / "e"), max_to_keep=0)


def test_restore_or_initialize(tf, tmp_path):
    v = tf.Variable(0.0)
    calls = []
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), str(tmp_path), max_to_keep=1,
                                         init_fn=lambda: calls.append(v.assign(3.0)))
    assert manager.restore_or_initialize() is None
    assert len(calls) == 1 and v.numpy() == 3.0
    manager.save()
    v.assign(9.0)
    assert manager.restore_or_initialize() == str(tmp_path / "ckpt-1")
    assert len(calls) == 1 and v.numpy() == 3.0

    def fails():
        raise RuntimeError("init_fn failed")

    empty = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), str(tmp_path / "empty"), 1, init_fn=fails)
    with pytest.raises(RuntimeError, match="init_fn failed"):
        empty.restore_or_initialize()


def test_checkpoint_interval_follows_the_step_counter(tf, tmp_path):
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(tmp_path), max_to_keep=None,
                                         step_counter=step, checkpoint_interval=10)
    saved = []
    for _ in range(25):
        path = manager.save()
        if path is not None:
            saved.append(int(step.numpy()))
        step.assign_add(1)
    assert saved == [0, 10, 20]
    assert manager.save(check_interval=False) is not None


def test_async_checkpoint_option(tf, tmp_path):
    v = tf.Variable(np.arange(1000, dtype=np.float32))
    checkpoint = tf.train.Checkpoint(v=v)
    options = tf.train.CheckpointOptions(experimental_enable_async_checkpoint=True)
    path = checkpoint.save(str(tmp_path / "a"), options=options)
    v.assign(np.zeros(1000, np.float32))  # the save took a snapshot: later changes are not in the file
    checkpoint.sync()
    checkpoint.restore(path).assert_consumed()
    assert bits(v.numpy()) == bits(np.arange(1000, dtype=np.float32))

    # The option is taken save by save, also through a manager made before any async save.
    manager = tf.train.CheckpointManager(checkpoint, str(tmp_path / "managed"), max_to_keep=2)
    checkpoint.restore(manager.latest_checkpoint)
    v.assign(np.ones(1000, np.float32))
    managed = manager.save(options=options)
    v.assign(np.zeros(1000, np.float32))
    assert manager.save(options=tf.train.CheckpointOptions()).endswith("ckpt-3")  # waits for the write before
    checkpoint.restore(managed).assert_consumed()
    assert bits(v.numpy()) == bits(np.ones(1000, np.float32))


def test_saves_from_threads(tf, tmp_path):
    """Saves release the GIL: several threads save their own checkpoints at once and each file holds its values."""
    values = [np.full(10000, i, np.float32) for i in range(4)]
    paths = [None] * 4

    def save(i):
        paths[i] = tf.train.Checkpoint(v=tf.Variable(values[i])).save(str(tmp_path / f"t{i}"))

    threads = [threading.Thread(target=save, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, path in enumerate(paths):
        v = tf.Variable(np.zeros(10000, np.float32))
        tf.train.Checkpoint(v=v).restore(path).assert_consumed()
        assert bits(v.numpy()) == bits(values[i])


def test_missing_names_say_so(tf):
    for name in ("Coordinator", "ExponentialMovingAverage"):
        with pytest.raises(NotImplementedError, match=f"tf.train.{name} is not implemented by lockstep"):
            getattr(tf.train, name)
    with pytest.raises(NotImplementedError, match="tf.train.experimental.PythonState"):
        tf.train.experimental.PythonState
    with pytest.raises(AttributeError):
        tf.train.no_such_name


def test_reexports_come_from_their_modules(tf):
    """tf.train.ClusterSpec and the tf.Example protos are those of lockstep.distribute and lockstep.io, or say
    that they are missing while those modules are."""
    import importlib

    for name, module in (("ClusterSpec", "lockstep.distribute.cluster_resolver"), ("Example", "lockstep.io._example"),
                         ("Int64List", "lockstep.io._example")):
        try:
            expected = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError, NotImplementedError):
            with pytest.raises(NotImplementedError, match=f"tf.train.{name} is not implemented"):
                getattr(tf.train, name)
        else:
            assert getattr(tf.train, name) is expected


def test_keras_model_and_optimizer(tf, tmp_path):
    try:
        Sequential, Dense = tf.keras.Sequential, tf.keras.layers.Dense
    except (AttributeError, NotImplementedError):
        pytest.skip("lockstep.keras has no Sequential model yet (the Keras binding is not merged)")
    model = Sequential([tf.keras.Input((3,)), Dense(4, activation="relu"), Dense(2)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    x, y = np.random.default_rng(0).standard_normal((16, 3)), np.random.default_rng(1).standard_normal((16, 2))
    model.fit(x.astype(np.float32), y.astype(np.float32), epochs=1, verbose=0)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=model.optimizer)
    path = checkpoint.save(str(tmp_path / "keras"))
    expected = [bits(w) for w in model.get_weights()]
    iterations = int(model.optimizer.iterations.numpy())

    model.fit(x.astype(np.float32), y.astype(np.float32), epochs=1, verbose=0)
    assert [bits(w) for w in model.get_weights()] != expected
    checkpoint.restore(path).assert_consumed()
    assert [bits(w) for w in model.get_weights()] == expected
    assert int(model.optimizer.iterations.numpy()) == iterations


def test_tensorflow_index_files_agree(tf, tmp_path):
    """lockstep writes TF's `checkpoint` index file and reads TF's, but the checkpoints themselves are lockstep's
    safetensors files, which TensorFlow cannot read (nor lockstep TensorFlow's): each side's latest_checkpoint
    names only its own files, and restoring a TensorFlow prefix says what is missing."""
    real_tf = tensorflow_or_skip()
    tf_dir = tmp_path / "tf"
    manager = real_tf.train.CheckpointManager(real_tf.train.Checkpoint(v=real_tf.Variable(1.0)), str(tf_dir), 3)
    for _ in range(2):
        tf_path = manager.save()
    assert real_tf.train.latest_checkpoint(str(tf_dir)) == tf_path
    assert tf.train.latest_checkpoint(str(tf_dir)) is None  # the index names no safetensors file
    with pytest.raises(tf.errors.NotFoundError, match="safetensors"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(tf_path)

    ls_dir = tmp_path / "lockstep"
    ls_manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), str(ls_dir), 3)
    ls_manager.save()
    ls_path = ls_manager.save()
    index = real_tf.train.get_checkpoint_state(str(ls_dir))
    assert index.model_checkpoint_path == ls_path
    assert list(index.all_model_checkpoint_paths) == ls_manager.checkpoints
    assert real_tf.train.latest_checkpoint(str(ls_dir)) is None  # the index names no TensorFlow checkpoint


def test_lists_dicts_and_the_trackable_method(tf, tmp_path):
    """Lists and dicts of variables are saved item by item, and any object with _lockstep_trackable() (the
    interface Keras models, optimizers and iterators implement) is checkpointable."""

    class Holder:
        def __init__(self, v):
            self.v = v

        def _lockstep_trackable(self):
            return tf._lockstep.train.variable_trackable(self.v)

    items = [tf.Variable(1.0), tf.Variable([2.0, 3.0])]
    table = {"a": tf.Variable(4, dtype=tf.int64)}
    holder = Holder(tf.Variable(5.0))
    checkpoint = tf.train.Checkpoint(items=items, table=table, holder=holder)
    path = checkpoint.save(str(tmp_path / "c"))
    for v in (*items, table["a"], holder.v):
        v.assign(tf.zeros_like(v))
    checkpoint.restore(path).assert_consumed()
    assert [items[0].numpy(), list(items[1].numpy()), table["a"].numpy(), holder.v.numpy()] == [1.0, [2.0, 3.0], 4,
                                                                                                 5.0]
    with pytest.raises(ValueError, match="expecting bad to be a trackable object"):
        tf.train.Checkpoint(bad=[tf.Variable(1.0), "text"])


def test_step_counter_may_be_any_integer_like(tf, tmp_path):
    class Counter:
        value = 0

        def __int__(self):
            return self.value

    counter = Counter()
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), str(tmp_path), max_to_keep=None,
                                         step_counter=counter, checkpoint_interval=5)
    saved = []
    for step in range(12):
        counter.value = step
        if manager.save() is not None:
            saved.append(step)
    assert saved == [0, 5, 10]


def test_objects_alive_at_exit(tmp_path):
    """An interpreter that exits holding a manager with a Python init_fn, an async checkpoint and a default summary
    writer ends cleanly, with the checkpoint written."""
    import subprocess
    import sys

    program = f"""
import lockstep as tf
v = tf.Variable([1.0, 2.0])
checkpoint = tf.train.Checkpoint(v=v)
manager = tf.train.CheckpointManager(checkpoint, {str(tmp_path / 'ckpt')!r}, 2, init_fn=lambda: v.assign([0.0, 0.0]))
manager.restore_or_initialize()
background = tf.train.Checkpoint(w=tf.Variable(tf.zeros([3000000])))
background.save({str(tmp_path / 'async')!r}, options=tf.train.CheckpointOptions(enable_async=True))
manager.save()
tf.summary.create_file_writer({str(tmp_path / 'logs')!r}).set_as_default(step=1)
tf.summary.scalar("x", 1.0)
print("done")
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
    assert (tmp_path / "async-1.safetensors").exists() and (tmp_path / "ckpt" / "ckpt-1.safetensors").exists()
    from test_summary import read

    assert [(step, float(value)) for step, value in read(tmp_path / "logs")[0]["x"]] == [(1, 1.0)]


def test_manager_numbering_agrees_with_tensorflow(tf, tmp_path):
    """The same saves through TensorFlow's manager and lockstep's keep the same numbers and latest checkpoint."""
    real_tf = tensorflow_or_skip()

    def run(module, directory):
        checkpoint = module.train.Checkpoint(v=module.Variable(1.0))
        checkpoint.save(str(directory / "direct" / "c"))  # counts: the manager numbers from save_counter
        manager = module.train.CheckpointManager(checkpoint, str(directory), max_to_keep=2, checkpoint_name="m")
        numbers = [manager.save(), manager.save(), manager.save(checkpoint_number=10), manager.save()]
        return ([p.rsplit("/", 1)[1] for p in numbers], [p.rsplit("/", 1)[1] for p in manager.checkpoints],
                manager.latest_checkpoint.rsplit("/", 1)[1], int(checkpoint.save_counter))

    assert run(tf, tmp_path / "lockstep") == run(real_tf, tmp_path / "tf")


def test_dropping_a_manager_during_a_background_write(tmp_path):
    """A manager with Python callbacks dropped while its checkpoint's background write runs: the write may let go
    of the manager on its own thread while this one, holding the GIL, waits for it. Nothing deadlocks."""
    import subprocess
    import sys

    program = f"""
import gc
import lockstep as tf
for i in range(10):
    checkpoint = tf.train.Checkpoint(v=tf.Variable(tf.zeros([1000000])))
    options = tf.train.CheckpointOptions(experimental_enable_async_checkpoint=True)
    checkpoint.save({str(tmp_path)!r} + f"/direct{{i}}/c", options=options)
    manager = tf.train.CheckpointManager(checkpoint, {str(tmp_path)!r} + f"/managed{{i}}", 1,
                                         init_fn=lambda: None, step_counter=lambda: 0)
    manager.save()
    del manager, checkpoint
    gc.collect()
print("done")
"""
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
    assert len(list(tmp_path.glob("managed*/ckpt-2.safetensors"))) == 10


def test_checkpoint_files_are_safetensors(tf, tmp_path):
    """A checkpoint is a safetensors file: the safetensors package reads its tensors, named "<object>/<name>"
    (nested checkpoints add their names), bit for bit; its metadata says what wrote it."""
    safetensors_numpy = pytest.importorskip("safetensors.numpy", reason="safetensors is not installed in this venv")
    from safetensors import safe_open

    weights = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    inner = tf.train.Checkpoint(n=tf.Variable(7, dtype=tf.int64))
    checkpoint = tf.train.Checkpoint(w=tf.Variable(weights), inner=inner)
    path = checkpoint.save(str(tmp_path / "ckpt"))
    tensors = safetensors_numpy.load_file(path + ".safetensors")
    assert sorted(tensors) == ["inner/n", "w"]
    assert bits(tensors["w"]) == bits(weights) and tensors["inner/n"].item() == 7
    with safe_open(path + ".safetensors", framework="numpy") as f:
        metadata = f.metadata()
    assert metadata["format"] == "lockstep.checkpoint" and metadata["save_counter"] == "1"


def saved_run(tf, directory, count=3):
    """A manager's checkpoints 1..count of v = 1..count in `directory`."""
    v = tf.Variable(0.0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), str(directory), max_to_keep=None)
    for i in range(1, count + 1):
        v.assign(float(i))
        manager.save()
    return [directory / f"ckpt-{i}.safetensors" for i in range(1, count + 1)]


@pytest.mark.parametrize("damage", ["missing", "garbled", "names_a_gone_file", "names_a_damaged_file"])
def test_latest_checkpoint_warns_and_finds_the_newest_valid(tf, tmp_path, capfd, damage):
    """The tutorial's custom loop restores tf.train.latest_checkpoint(dir): where the index cannot be trusted, it
    says so and names the newest valid checkpoint on disk, where TensorFlow returns None and the loop starts over."""
    files = saved_run(tf, tmp_path)
    index = tmp_path / "checkpoint"
    if damage == "missing":
        index.unlink()
    elif damage == "garbled":
        index.write_bytes(b"\x00\xff garbage \xfe\n")
    elif damage == "names_a_gone_file":
        index.write_text('model_checkpoint_path: "ckpt-7"\n')
    else:
        files[2].write_bytes(files[2].read_bytes()[:-3] + b"xyz")
    capfd.readouterr()
    expected = str(tmp_path / ("ckpt-2" if damage == "names_a_damaged_file" else "ckpt-3"))
    assert tf.train.latest_checkpoint(str(tmp_path)) == expected
    err = capfd.readouterr().err
    assert str(index) in err and expected in err, err
    v = tf.Variable(0.0)
    tf.train.Checkpoint(v=v).restore(tf.train.latest_checkpoint(str(tmp_path)))
    assert v.numpy() == float(expected[-1])


def test_manager_keeps_what_the_index_does_not_list(tf, tmp_path, capfd):
    """An index cut to its first line, with the newest file damaged: nothing is deleted, the unlisted files are
    named in a warning, and the newest valid one is restored; saves then prune only what the manager listed."""
    files = saved_run(tf, tmp_path, 4)
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-4"\n')
    files[3].write_bytes(files[3].read_bytes()[: len(files[3].read_bytes()) // 2])
    capfd.readouterr()
    v = tf.Variable(0.0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), str(tmp_path), max_to_keep=1)
    assert all(f.exists() for f in files)
    assert manager.latest_checkpoint == manager.restore_or_initialize() == str(tmp_path / "ckpt-3")
    assert v.numpy() == 3.0
    err = capfd.readouterr().err
    assert "does not list 3 checkpoint(s)" in err and "(ckpt-1, ckpt-2, ckpt-3)" in err, err
    assert str(files[3]) in err and "is corrupted" in err, err
    manager.save()  # ckpt-4 again, replacing the damaged file the index listed
    manager.save()
    assert manager.checkpoints == [str(tmp_path / "ckpt-5")]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint", "ckpt-1.safetensors", "ckpt-2.safetensors", "ckpt-3.safetensors", "ckpt-5.safetensors"]
