"""Tensors, Variables, GradientTape and the tf.* ops from Python (deliverables 2 and 3 of issue 22)."""
import numpy as np
import pytest

import lockstep as tf
from conftest import tensorflow_or_skip


def test_constant_follows_tensorflows_dtype_rules():
    assert tf.constant(1.5).dtype == tf.float32
    assert tf.constant(3).dtype == tf.int32
    assert tf.constant(True).dtype == tf.bool
    assert tf.constant([[1.0, 2.0]]).dtype == tf.float32
    assert tf.constant(np.zeros(3)).dtype == tf.float64  # NumPy data keeps its dtype
    assert tf.constant(np.zeros(3, np.int64)).dtype == tf.int64
    assert tf.constant([1, 2], dtype=tf.float32).dtype == tf.float32
    assert tf.constant(0, shape=[2, 3]).shape == (2, 3)
    assert tf.dtypes.int64 is tf.int64 and tf.as_dtype("float32") is tf.float32 and tf.float32 == np.float32


def test_range_takes_the_widest_dtype_of_its_arguments_as_tensorflow():
    assert tf.range(3).dtype == tf.int32
    assert tf.range(0.5, 2).dtype == tf.float32
    assert tf.range(tf.constant(5, dtype=tf.int64)).dtype == tf.int64
    assert tf.range(np.int64(1), 4).dtype == tf.int64
    assert tf.range(1, tf.constant(4.0, dtype=tf.float64)).dtype == tf.float64
    assert tf.range(5, dtype=tf.float32).dtype == tf.float32
    assert list(tf.range(tf.constant(1, dtype=tf.int64), 7, 2).numpy()) == [1, 3, 5]
    with pytest.raises(TypeError, match="bool"):
        tf.range(tf.constant(True))


def test_numpy_is_a_view_of_a_contiguous_tensor_and_a_copy_of_a_variable():
    t = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    a, b = t.numpy(), t.numpy()
    assert a.ctypes.data == b.ctypes.data  # zero-copy: both views of the tensor's memory
    np.testing.assert_array_equal(np.asarray(t), np.arange(6).reshape(2, 3))
    v = tf.Variable([1.0, 2.0])
    snapshot = v.numpy()
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(snapshot, [1.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])
    assert tf.cast(tf.constant([1.5]), tf.bfloat16).numpy().dtype == np.float32  # NumPy has no bfloat16


def test_dlpack_both_ways():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(np.from_dlpack(t), t.numpy())
    back = tf.convert_to_tensor(np.from_dlpack(t))
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_operators_take_python_numbers_in_the_tensors_dtype():
    x = tf.constant([1.0, 2.0, 4.0])
    np.testing.assert_allclose((x * 2 + 1).numpy(), [3, 5, 9])
    np.testing.assert_allclose((1 - x).numpy(), [0, -1, -3])
    np.testing.assert_allclose((2 / x).numpy(), [2, 1, 0.5])
    np.testing.assert_allclose((x ** 2).numpy(), [1, 4, 16])
    np.testing.assert_allclose((-x).numpy(), [-1, -2, -4])
    np.testing.assert_array_equal((x > 1.5).numpy(), [False, True, True])
    np.testing.assert_array_equal((x == 2.0).numpy(), [False, True, False])
    np.testing.assert_allclose((np.ones(3, np.float32) * x).numpy(), [1, 2, 4])
    m = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose((m @ m).numpy(), [[7, 10], [15, 22]])
    assert float(tf.reduce_sum(x)) == 7.0 and int(tf.constant(3)) == 3
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)


def test_basic_indexing():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = tf.constant(a)
    for key in [0, -1, (1, 2), slice(None), (slice(None), 1), (Ellipsis, 2), (slice(0, 1), slice(1, 3)),
                (slice(None), slice(None, None, 2)), (None, 0), (1, Ellipsis, slice(1, None))]:
        np.testing.assert_array_equal(t[key].numpy(), a[key], err_msg=str(key))
    with pytest.raises(IndexError):
        t[2]


def test_reductions_shapes_and_free_functions():
    a = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]], np.float32)
    t = tf.constant(a)
    np.testing.assert_allclose(tf.reduce_sum(t).numpy(), a.sum())
    np.testing.assert_allclose(tf.reduce_mean(t, axis=0).numpy(), a.mean(0))
    np.testing.assert_allclose(tf.reduce_max(t, axis=1, keepdims=True).numpy(), a.max(1, keepdims=True))
    np.testing.assert_allclose(tf.reduce_min(t, axis=[0, 1]).numpy(), a.min())
    np.testing.assert_array_equal(tf.argmax(t, axis=1).numpy(), [1, 2])
    assert tf.argmax(t, axis=1).dtype == tf.int64
    np.testing.assert_array_equal(tf.shape(t).numpy(), [2, 3])
    assert tf.reshape(t, [3, -1]).shape == (3, 2)
    np.testing.assert_allclose(tf.transpose(t).numpy(), a.T)
    np.testing.assert_allclose(tf.add_n([t, t, a]).numpy(), 3 * a)
    np.testing.assert_allclose(tf.concat([t, t], axis=0).numpy(), np.concatenate([a, a]))
    np.testing.assert_allclose(tf.stack([t, t], axis=1).numpy(), np.stack([a, a], 1))
    np.testing.assert_allclose(tf.expand_dims(t, -1).numpy(), a[..., None])
    np.testing.assert_allclose(tf.squeeze(tf.expand_dims(t, 0)).numpy(), a)
    np.testing.assert_allclose(tf.gather(t, [1, 0]).numpy(), a[[1, 0]])
    np.testing.assert_allclose(tf.one_hot([0, 2], 3).numpy(), np.eye(3)[[0, 2]])
    np.testing.assert_allclose(tf.math.sqrt(t).numpy(), np.sqrt(a), rtol=1e-6)
    np.testing.assert_allclose(tf.nn.softmax(t).numpy(), np.exp(a) / np.exp(a).sum(1, keepdims=True), rtol=1e-6)
    np.testing.assert_allclose(tf.clip_by_value(t, 2.0, 4.0).numpy(), np.clip(a, 2, 4))
    np.testing.assert_allclose(tf.where(t > 3.0, t, 0.0).numpy(), np.where(a > 3, a, 0))
    assert [u.shape for u in tf.unstack(t)] == [(3,), (3,)]


def test_gradient_tape_with_variables_tensors_and_persistence():
    w = tf.Variable([[1.0], [2.0]])
    x = tf.constant([[3.0, 4.0]])
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))
    (g,) = tape.gradient(loss, [w])
    np.testing.assert_allclose(g.numpy(), [[66.0], [88.0]])  # 2 * (x w) * x^T
    with pytest.raises(RuntimeError, match="persistent"):
        tape.gradient(loss, [w])

    t = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(t)
        y = t * t
        z = y * t
    assert float(tape.gradient(y, t)) == 6.0
    assert float(tape.gradient(z, t)) == 27.0
    assert tape.gradient(y, tf.Variable(1.0)) is None  # unconnected
    grads = tape.gradient(z, {"a": t, "b": [t]})
    assert float(grads["a"]) == 27.0 and float(grads["b"][0]) == 27.0


def test_ops_outside_the_with_block_are_not_recorded():
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = v * v
    later = y * v  # after the block: not on the tape
    assert float(tape.gradient(y, v)) == 4.0
    with tf.GradientTape() as tape2:
        with tape2.stop_recording():
            skipped = v * 3.0
        kept = v * 5.0
    assert float(tape2.gradient(kept, v)) == 5.0
    assert later is not None and skipped is not None


def test_tf_function_runs_the_python_and_keeps_its_name():
    calls = []

    @tf.function
    def step(x):
        calls.append(1)
        return x * 2

    @tf.function(reduce_retracing=True)
    def step2(x):
        return x + 1

    assert float(step(tf.constant(2.0))) == 4.0 and float(step2(1.0)) == 2.0
    assert step.__name__ == "step" and len(calls) == 1


def test_bad_input_raises_one_line_python_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="cannot reshape a tensor of shape"):
        tf.reshape(tf.zeros([2, 3]), [4])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.constant([1.0]) + tf.constant([1, 2])  # float32 + int32, as TF refuses it
    with pytest.raises(tf.errors.InvalidArgumentError, match="strings"):
        tf.constant([object()])
    with pytest.raises(TypeError, match="give strings"):
        tf.constant([1], dtype=tf.string)
    assert tf.constant(["a"]).dtype == tf.string
    with pytest.raises(TypeError):
        tf.as_dtype("complex64")
    with pytest.raises(NotImplementedError, match=r"tf.Graph is not implemented by lockstep"):
        tf.Graph
    with pytest.raises(NotImplementedError, match=r"tf.lite.Interpreter is not implemented by lockstep"):
        tf.lite.Interpreter
    with pytest.raises(AttributeError):
        tf.no_such_symbol_anywhere
    assert tf.errors.InvalidArgumentError.__mro__[1] is tf.errors.OpError


def test_random_draws_repeat_after_set_seed():
    tf.random.set_seed(7)
    a = tf.random.uniform([4]).numpy()
    tf.random.set_seed(7)
    b = tf.random.uniform([4]).numpy()
    np.testing.assert_array_equal(a, b)
    assert ((a >= 0) & (a < 1)).all()
    assert tf.random.normal([1000], seed=1).numpy().std() == pytest.approx(1.0, abs=0.1)


def test_agrees_with_tensorflow_on_a_small_network_and_its_gradient():
    real = tensorflow_or_skip()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 5)).astype(np.float32)
    w = rng.standard_normal((5, 3)).astype(np.float32)
    labels = rng.integers(0, 3, 8)

    def run(lib):
        wv = lib.Variable(w)
        with lib.GradientTape() as tape:
            logits = lib.nn.relu(lib.matmul(x, wv))
            loss = lib.reduce_mean(lib.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
        return loss.numpy(), tape.gradient(loss, wv).numpy()

    (ours, ours_grad), (theirs, theirs_grad) = run(tf), run(real)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    np.testing.assert_allclose(ours_grad, theirs_grad, rtol=1e-5, atol=1e-7)


def test_a_shape_given_as_one_number_is_one_dimension(tf):
    # TensorFlow takes tf.zeros(2) as tf.zeros([2]); a scalar tensor or NumPy number too.
    import numpy as np

    for make in (tf.zeros, tf.ones, tf.random.normal, tf.random.uniform, tf.random.truncated_normal):
        assert make(3).shape == (3,), make
    assert tf.fill(2, 1.5).numpy().tolist() == [1.5, 1.5]
    assert tf.zeros(np.int64(4)).shape == (4,) and tf.zeros(tf.constant(5)).shape == (5,)
    assert tf.constant(1.0, shape=3).shape == (3,) and tf.broadcast_to(2.0, 4).shape == (4,)
    assert tf.TensorShape(7) == tf.TensorShape([7]) and tf.zeros([]).shape == ()


def test_linspace_matches_tensorflow_values_dtypes_and_gradients(tf):
    import numpy as np

    cases = [((0.0, 1.0, 4), {}), ((0, 10, 5), {}), (([0.0, 1.0], [1.0, 3.0], 3), {"axis": -1}),
             (([[0.0], [2.0]], [5.0, 6.0, 7.0], 4), {"axis": 1}), ((1.0, 2.0, 1), {}), ((1.0, 2.0, 0), {})]
    ours = [tf.linspace(*args, **kwargs) for args, kwargs in cases]
    start, stop = tf.Variable([0.5, 1.0]), tf.Variable([2.0, -1.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.linspace(start, stop, 5) * tf.constant([[1.0], [2.0], [3.0], [4.0], [5.0]]))
    grads = [g.numpy().tolist() for g in tape.gradient(y, [start, stop])]
    assert grads == [[5.0, 5.0], [10.0, 10.0]]
    real = tensorflow_or_skip()
    for (args, kwargs), got in zip(cases, ours):
        want = real.linspace(*args, **kwargs)
        assert got.dtype.name == want.dtype.name and got.shape == tuple(want.shape), (args, kwargs)
        assert np.array_equal(got.numpy(), want.numpy()), (args, kwargs)  # bit for bit: the same formula
    rs, rt = real.Variable([0.5, 1.0]), real.Variable([2.0, -1.0])
    with real.GradientTape() as tape:
        y = real.reduce_sum(real.linspace(rs, rt, 5) * real.constant([[1.0], [2.0], [3.0], [4.0], [5.0]]))
    assert [g.numpy().tolist() for g in tape.gradient(y, [rs, rt])] == grads
