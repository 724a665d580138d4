"""tf.summary from Python: what the writers write is read back by TensorBoard's own reader with its values and
steps, histograms agree with TensorFlow's, and the default writer, step and record_if behave as TensorFlow's."""
import threading

import numpy as np
import pytest
from conftest import tensorflow_or_skip

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                                        reason="tensorboard is not installed in this venv")
from tensorboard.util import tensor_util  # noqa: E402


def read(logdir):
    """{tag: [(step, value)]} of every tensor summary in logdir, and the plugin each tag is for."""
    accumulator = event_accumulator.EventAccumulator(str(logdir), size_guidance={event_accumulator.TENSORS: 0})
    accumulator.Reload()
    values = {tag: [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in accumulator.Tensors(tag)]
              for tag in accumulator.Tags()["tensors"]}
    plugins = {tag: accumulator.SummaryMetadata(tag).plugin_data.plugin_name for tag in values}
    return values, plugins


def test_scalars_histograms_and_text_read_back(tf, tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    losses = [2.5, 1.25, 0.625, np.float32(0.3)]
    with writer.as_default():
        for step, loss in enumerate(losses):
            assert tf.summary.scalar("loss", loss, step=step * 10)
        tf.summary.scalar("from_tensor", tf.constant(3.5), step=1)
        tf.summary.scalar("from_variable", tf.Variable(4.5), step=2)
        tf.summary.histogram("weights", np.arange(12, dtype=np.float32), step=3, buckets=4)
        tf.summary.text("notes", "a **Markdown** note", step=4)
    writer.close()

    values, plugins = read(tmp_path)
    assert [(s, float(v)) for s, v in values["loss"]] == [(s * 10, float(np.float32(x))) for s, x in enumerate(losses)]
    assert values["loss"][0][1].dtype == np.float32
    assert [(s, float(v)) for s, v in values["from_tensor"]] == [(1, 3.5)]
    assert [(s, float(v)) for s, v in values["from_variable"]] == [(2, 4.5)]
    (step, buckets), = values["weights"]
    assert step == 3 and buckets.shape == (4, 3) and buckets[:, 2].sum() == 12
    assert values["notes"][0][0] == 4 and values["notes"][0][1].item() == b"a **Markdown** note"
    assert plugins == {"loss": "scalars", "from_tensor": "scalars", "from_variable": "scalars",
                       "weights": "histograms", "notes": "text"}


def test_histograms_agree_with_tensorflow(tf, tmp_path):
    real_tf = tensorflow_or_skip()
    data = [np.random.default_rng(0).standard_normal((50, 7)).astype(np.float32), np.full(5, 2.0), np.zeros(0),
            np.arange(10, dtype=np.int64)]
    with tf.summary.create_file_writer(str(tmp_path / "lockstep")).as_default():
        for i, d in enumerate(data):
            tf.summary.histogram(f"h{i}", d, step=i)
            tf.summary.histogram(f"b{i}", d, step=i, buckets=7)
    with real_tf.summary.create_file_writer(str(tmp_path / "tf")).as_default():
        for i, d in enumerate(data):
            real_tf.summary.histogram(f"h{i}", d, step=i)
            real_tf.summary.histogram(f"b{i}", d, step=i, buckets=7)
    ours, theirs = read(tmp_path / "lockstep")[0], read(tmp_path / "tf")[0]
    assert ours.keys() == theirs.keys()
    for tag in theirs:
        (step, expected), = theirs[tag]
        (our_step, got), = ours[tag]
        assert our_step == step
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=0, err_msg=tag)


def test_tensorflow_reads_the_events(tf, tmp_path):
    """TF's own event reader (summary_iterator) reads the file as it reads its own: file_version first."""
    real_tf = tensorflow_or_skip()
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=7):
        tf.summary.scalar("accuracy", 0.875)
    (file,) = tmp_path.iterdir()
    assert file.name.startswith("events.out.tfevents.") and file.name.endswith(".v2")
    events = list(real_tf.compat.v1.train.summary_iterator(str(file)))
    assert events[0].file_version == "brain.Event:2"
    (value,), step = events[1].summary.value, events[1].step
    assert (value.tag, step, real_tf.make_ndarray(value.tensor).item()) == ("accuracy", 7, 0.875)


def test_without_a_default_writer_nothing_is_written(tf, tmp_path):
    assert not bool(tf.summary.scalar("x", 1.0, step=1))
    assert not tf.summary.should_record_summaries()
    with tf.summary.create_noop_writer().as_default():
        assert not bool(tf.summary.scalar("x", 1.0, step=1))
        assert not tf.summary.should_record_summaries()
    with tf.summary.create_file_writer(None).as_default():
        assert not bool(tf.summary.histogram("h", [1.0], step=1))


def test_steps_and_record_if(tf, tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default():
        with pytest.raises(ValueError, match="No step set"):
            tf.summary.scalar("x", 1.0)
        assert tf.summary.experimental.get_step() is None
    with writer.as_default(step=5):
        assert tf.summary.experimental.get_step() == 5
        tf.summary.scalar("x", 1.0)
    assert tf.summary.experimental.get_step() is None

    step = tf.Variable(0, dtype=tf.int64)
    tf.summary.experimental.set_step(step)
    try:
        assert tf.summary.experimental.get_step() is step
        with writer.as_default():
            for i in range(6):
                with tf.summary.record_if(lambda: int(step) % 2 == 0):
                    assert tf.summary.should_record_summaries() == (i % 2 == 0)
                    tf.summary.scalar("y", float(i))
                with tf.summary.record_if(False):
                    assert not bool(tf.summary.scalar("never", 1.0))
                step.assign_add(1)
    finally:
        tf.summary.experimental.set_step(None)
    writer.flush()
    values, _ = read(tmp_path)
    assert [s for s, _ in values["x"]] == [5]
    assert [(s, float(v)) for s, v in values["y"]] == [(0, 0.0), (2, 2.0), (4, 4.0)]
    assert "never" not in values


def test_set_as_default_and_threads(tf, tmp_path):
    """set_as_default lasts beyond a block; a thread without a writer of its own uses the main thread's, and one
    that sets its own does not change the main thread's."""
    main_writer = tf.summary.create_file_writer(str(tmp_path / "main"))
    main_writer.set_as_default(step=1)
    try:
        other = tf.summary.create_file_writer(str(tmp_path / "other"))

        def worker():
            tf.summary.scalar("from_thread", 1.0)
            other.set_as_default(step=2)
            tf.summary.scalar("own", 2.0)

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
        tf.summary.scalar("main", 3.0)
        tf.summary.flush()
        other.flush()
    finally:
        tf.summary.create_noop_writer().set_as_default()
        tf.summary.experimental.set_step(None)
    assert sorted(read(tmp_path / "main")[0]) == ["from_thread", "main"]
    assert list(read(tmp_path / "other")[0]) == ["own"]


def test_errors(tf, tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path))
    with writer.as_default(step=0):
        with pytest.raises(ValueError, match=r"Expected scalar shape, saw shape: \(2,\)"):
            tf.summary.scalar("x", [1.0, 2.0])
        with pytest.raises(TypeError, match="tensor must be of type tf.string"):
            tf.summary.text("t", np.int32(5))
    writer.close()
    with pytest.raises(RuntimeError, match="already closed"):
        with writer.as_default():
            pass
    for name in ("image", "audio", "trace_on", "graph"):
        with pytest.raises(NotImplementedError, match=f"tf.summary.{name} is not implemented by lockstep"):
            getattr(tf.summary, name)
    with pytest.raises(NotImplementedError, match="tf.summary.experimental.write_raw_pb"):
        tf.summary.experimental.write_raw_pb


def test_writer_creates_its_directory_and_parents(tf, tmp_path):
    logdir = tmp_path / "a" / "b" / "train"
    with tf.summary.create_file_writer(str(logdir), filename_suffix=".lockstep").as_default(step=0):
        tf.summary.scalar("x", 1.0)
    (file,) = logdir.iterdir()
    assert file.name.endswith(".lockstep")
    assert [float(v) for _, v in read(logdir)[0]["x"]] == [1.0]
