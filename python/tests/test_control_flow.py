"""tf.cond, tf.while_loop, tf.map_fn, tf.scan, tf.TensorArray, tf.py_function and the other control-flow names of
issue 36, against TensorFlow 2.21's values."""
import numpy as np
import pytest

from conftest import tensorflow_or_skip


def both(tf, run):
    """run(lib) for lockstep and TensorFlow, as NumPy nests."""
    real = tensorflow_or_skip()
    return run(tf), run(real)


def test_cond_and_while_loop_agree_with_tensorflow(tf):
    def run(lib):
        a = lib.cond(lib.constant(False), lambda: lib.constant(1.0), lambda: lib.constant(2.0))
        b = lib.cond(3 > 2, lambda: lib.constant([1, 2]), lambda: lib.constant([3, 4]))
        i, s = lib.while_loop(lambda i, s: i < 5, lambda i, s: (i + 1, s * 2.0), (lib.constant(0), lib.constant(1.0)))
        (j,) = lib.while_loop(lambda j: j < 10, lambda j: [j + 3], [lib.constant(1)], maximum_iterations=2)
        return [a.numpy(), b.numpy(), i.numpy(), s.numpy(), j.numpy()]

    mine, theirs = both(tf, run)
    for m, t in zip(mine, theirs):
        np.testing.assert_array_equal(m, t)


def test_while_loop_nest_single_var_and_shape_invariants(tf):
    out = tf.while_loop(lambda d: d["i"] < 3, lambda d: {"i": d["i"] + 1, "x": d["x"] * 2}, {"i": 0, "x": tf.ones(2)})
    assert int(out["i"]) == 3 and out["x"].numpy().tolist() == [8.0, 8.0]
    grown = tf.while_loop(lambda x: x.shape[0] < 4, lambda x: tf.concat([x, x], 0), tf.ones(1),
                          shape_invariants=tf.TensorShape([None]))
    assert grown.shape == (4,)
    with pytest.raises(ValueError, match="shape_invariant"):
        tf.while_loop(lambda x: x.shape[0] < 4, lambda x: tf.concat([x, x], 0), tf.ones(1),
                      shape_invariants=tf.TensorShape([1]))
    with pytest.raises(ValueError, match="structure of loop_vars"):
        tf.while_loop(lambda i: i < 3, lambda i: (i + 1, 2), [0])
    with pytest.raises(ValueError, match="must be provided"):
        tf.while_loop(lambda: True, lambda: (), [])
    with pytest.raises(TypeError, match="'cond' must be callable"):
        tf.while_loop(1, lambda i: i, [0])
    with pytest.raises(ValueError, match="scalar"):
        tf.while_loop(lambda i: i < 3, lambda i: [i + 1], [0], maximum_iterations=[1, 2])


def test_while_loop_is_differentiable(tf):
    x = tf.Variable(1.5)
    with tf.GradientTape() as tape:
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), (0, tf.constant(1.0)))
    assert float(tape.gradient(y, x)) == pytest.approx(3 * 1.5 ** 2)


def test_cond_bad_input(tf):
    with pytest.raises(TypeError, match="true_fn"):
        tf.cond(True, None, lambda: 1)
    with pytest.raises(TypeError, match="'false_fn' must be callable"):
        tf.cond(True, lambda: 1, 2)
    with pytest.raises(ValueError, match="scalar"):
        tf.cond(tf.constant([True, False]), lambda: 1, lambda: 2)


def test_case_and_switch_case(tf):
    def run(lib):
        f, t = lib.constant(False), lib.constant(True)
        return [lib.case([(f, lambda: lib.constant(1)), (t, lambda: lib.constant(2))], default=lambda: lib.constant(3)),
                lib.case([(f, lambda: lib.constant(1))], default=lambda: lib.constant(3)),
                lib.switch_case(lib.constant(1), [lambda: lib.constant(10), lambda: lib.constant(20)]),
                lib.switch_case(lib.constant(7), [lambda: lib.constant(10), lambda: lib.constant(20)]),
                lib.switch_case(lib.constant(-1), {0: lambda: lib.constant(10), 1: lambda: lib.constant(20)},
                                default=lambda: lib.constant(5))]

    mine, theirs = both(tf, run)
    assert [int(m) for m in mine] == [int(t) for t in theirs] == [2, 3, 20, 20, 5]
    f = tf.constant(False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="None of conditions"):
        tf.case([(f, lambda: 1)])
    with pytest.raises(TypeError, match="pred must be a Tensor"):
        tf.case([(True, lambda: 1)])
    with pytest.raises(TypeError, match="must be a Tensor"):
        tf.switch_case(1, [lambda: 1])
    with pytest.raises(TypeError, match="integer Tensor"):
        tf.switch_case(tf.constant(1.0), [lambda: 1])
    with pytest.raises(ValueError, match="contiguous"):
        tf.switch_case(tf.constant(0), {0: lambda: 1, 2: lambda: 2})


def test_map_fn_agrees_with_tensorflow(tf):
    def run(lib):
        m = lib.constant([[1.0, 2.0], [3.0, 4.0]])
        a = lib.map_fn(lambda x: x * 2.0, m)
        b = lib.map_fn(lambda x: (x[0], x[1]), (lib.constant([1, 2]), lib.constant([3.0, 4.0])))
        c = lib.map_fn(lambda x: (x, lib.cast(x, lib.float32) / 2), lib.constant([1, 2]),
                       fn_output_signature=(lib.int32, lib.float32))
        d = lib.map_fn(lambda x: lib.reduce_sum(x), lib.zeros([0, 3]))
        e = lib.map_fn(lambda r: {"s": r["a"] + r["b"]}, {"a": lib.constant([1.0]), "b": lib.constant([2.0])},
                       fn_output_signature={"s": lib.float32})
        return [a.numpy(), b[0].numpy(), b[1].numpy(), c[0].numpy(), c[1].numpy(), d.numpy(), e["s"].numpy()]

    mine, theirs = both(tf, run)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m, t)
        assert m.dtype == t.dtype and m.shape == t.shape


def test_map_fn_strings_gradient_and_bad_input(tf):
    out = tf.map_fn(lambda s: s, tf.constant(["a", "b"]), fn_output_signature=tf.string)
    assert out.numpy().tolist() == [b"a", b"b"]
    x = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.map_fn(lambda e: e * e, x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0, 6.0])
    with pytest.raises(ValueError, match="structure"):
        tf.map_fn(lambda x: x[0] + x[1], (tf.constant([1, 2]), tf.constant([3, 4])))
    with pytest.raises(ValueError, match="1\\+ dimensional"):
        tf.map_fn(lambda x: x, tf.constant(1))
    with pytest.raises(ValueError, match="first dimensions"):
        tf.map_fn(lambda x: x[0], (tf.constant([1, 2]), tf.constant([3])), fn_output_signature=tf.int32)
    with pytest.raises(ValueError, match="Incompatible shape"):
        tf.map_fn(lambda x: tf.range(x), tf.constant([1, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype int32"):
        tf.map_fn(lambda x: x, tf.constant([1, 2]), fn_output_signature=tf.float32)
    with pytest.raises(TypeError, match="callable"):
        tf.map_fn(1, tf.constant([1]))


def test_vectorized_map_folds_and_scan(tf):
    def run(lib):
        v = lib.constant([1, 2, 3])
        return [lib.vectorized_map(lambda r: r[0] * r[1], (lib.constant([1.0, 2.0]), lib.constant([3.0, 4.0]))),
                lib.foldl(lambda a, x: a * 10 + x, v, initializer=lib.constant(0)),
                lib.foldr(lambda a, x: a * 10 + x, v, initializer=lib.constant(0)),
                lib.foldl(lambda a, x: a + x, v),
                lib.foldl(lambda a, x: a + x[0] * x[1], (lib.constant([1.0, 2.0]), lib.constant([3.0, 4.0])),
                          initializer=lib.constant(0.0)),
                lib.scan(lambda a, x: a + x, v),
                lib.scan(lambda a, x: a * 10 + x, v, reverse=True),
                *lib.scan(lambda a, x: (a[0] + x, a[1] * x), lib.constant([1.0, 2.0, 3.0]),
                          initializer=(lib.constant(0.0), lib.constant(1.0)))]

    mine, theirs = both(tf, run)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m.numpy(), t.numpy())
    with pytest.raises(tf.errors.OutOfRangeError):
        tf.foldl(lambda a, x: a + x, tf.constant([], tf.int32))
    with pytest.raises(ValueError, match="first dimensions"):
        tf.vectorized_map(lambda r: r[0], (tf.constant([1.0, 2.0]), tf.constant([1.0])))


def test_tensor_array_agrees_with_tensorflow(tf):
    def run(lib):
        ta = lib.TensorArray(lib.float32, size=0, dynamic_size=True)
        for i in range(3):
            ta = ta.write(i, lib.constant([float(i), 1.0]))
        u = lib.TensorArray(lib.float32, size=3).unstack(lib.constant([1.0, 2.0, 3.0]))
        s = lib.TensorArray(lib.float32, size=3).scatter([2, 0], lib.constant([5.0, 6.0]))
        c = lib.TensorArray(lib.float32, size=2, infer_shape=False).write(0, [1.0, 2.0]).write(1, [3.0]).concat()
        sp = lib.TensorArray(lib.float32, size=2).split(lib.constant([1.0, 2.0, 3.0]), [1, 2])
        e = lib.TensorArray(lib.float32, size=0, element_shape=[3]).stack()
        return [ta.stack(), ta.size(), u.gather([2, 0]), s.stack(), c, sp.read(1), e]

    mine, theirs = both(tf, run)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m.numpy(), t.numpy())
        assert m.numpy().shape == t.numpy().shape


def test_tensor_array_write_returns_it_gradients_and_errors(tf):
    ta = tf.TensorArray(tf.float32, size=2)
    assert ta.write(0, 1.0) is ta and ta.dtype == tf.float32 and not ta.dynamic_size
    x = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        t = tf.TensorArray(tf.float32, size=2).write(0, x * 2).write(1, x * x)
        y = tf.reduce_sum(t.stack())
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [4.0, 6.0])
    with pytest.raises(tf.errors.OutOfRangeError, match="not resizeable"):
        tf.TensorArray(tf.float32, size=2).write(2, 1.0)
    with pytest.raises(tf.errors.OutOfRangeError, match="negative"):
        tf.TensorArray(tf.float32, size=2).write(-1, 1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.TensorArray(tf.float32, size=2).write(0, tf.constant(1))
    with pytest.raises(ValueError, match="Incompatible shape"):
        tf.TensorArray(tf.float32, size=2).write(0, [1.0]).write(1, [1.0, 2.0])
    read_once = tf.TensorArray(tf.float32, size=1).write(0, 1.0)
    read_once.read(0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="twice"):
        read_once.read(0)
    with pytest.raises(ValueError, match="Size must be declared"):
        tf.TensorArray(tf.float32)
    with pytest.raises(ValueError, match="static size 1"):
        tf.TensorArray(tf.float32, size=1).unstack([[1.0], [2.0]])
    strings = tf.TensorArray(tf.string, size=2).write(0, "a").write(1, "b").stack()
    assert strings.numpy().tolist() == [b"a", b"b"]


def test_py_function_and_numpy_function_agree_with_tensorflow(tf):
    def run(lib):
        a = lib.py_function(lambda x, y: x + y, [lib.constant(1.0), 2.0], lib.float32)
        b = lib.py_function(lambda x: (x, x * 2), [1.0], [lib.float32, lib.float32])
        c = lib.py_function(lambda s: s.numpy().upper(), [lib.constant("ab")], lib.string)
        d = lib.numpy_function(lambda x: (x * 2, np.int32(1)), [lib.constant([1.0, 2.0])], [lib.float32, lib.int32])
        e = lib.numpy_function(lambda x: x + 1, [lib.constant([1.0])], [lib.float32])
        return [a.numpy(), b[0].numpy(), b[1].numpy(), c.numpy(), d[0].numpy(), d[1].numpy(), e.numpy()]

    mine, theirs = both(tf, run)
    for m, t in zip(mine, theirs):
        np.testing.assert_array_equal(m, t)
        assert np.asarray(m).dtype == np.asarray(t).dtype


def test_py_function_gradient_nested_tout_and_errors(tf):
    x = tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.py_function(lambda a: a * a, [x], tf.float32)
        z = tf.numpy_function(lambda a: a * a, [x], tf.float32)
    assert float(tape.gradient(y, x)) == 6.0 and tape.gradient(z, x) is None  # as TF
    nested = tf.py_function(lambda a: {"x": a, "y": (a, 2.0)}, [1.0], {"x": tf.float32, "y": (tf.float32, tf.float64)})
    assert nested["y"][1].dtype == tf.float64 and float(nested["y"][1]) == 2.0
    assert tf.py_function(lambda a: None, [1.0], None) is None
    double = tf.py_function(Tout=tf.float32)(lambda a: a * 2)
    assert float(double(tf.constant(2.0))) == 4.0
    with pytest.raises(tf.errors.UnknownError, match="ZeroDivisionError"):
        tf.py_function(lambda a: 1 / 0, [1.0], tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.py_function(lambda a: tf.constant(3), [1.0], tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="expects to see 1 values"):
        tf.py_function(lambda a: (a, a), [1.0], [tf.float32])
    with pytest.raises(tf.errors.InvalidArgumentError, match="float64 array"):
        tf.numpy_function(lambda a: np.array([1.0]), [1.0], tf.float32)


def test_group_tuple_identity_n(tf):
    a, b = tf.constant(1), tf.constant([1.0, 2.0])
    assert tf.group(a, [b], name="g") is None
    with pytest.raises(ValueError, match="Unknown keyword"):
        tf.group(a, foo=1)
    assert tf.tuple([a, None, b])[1] is None and tf.tuple([a, b])[0] is a
    out = tf.identity_n([a, [1.0, 2.0]])
    assert out[0].numpy() == 1 and out[1].numpy().tolist() == [1.0, 2.0]


def test_autograph_to_code_to_graph_and_do_not_convert(tf):
    def f(x):
        if x > 0:
            x = x * 2
        return x

    assert tf.autograph.to_code(f).startswith("def f(x):") and "x * 2" in tf.autograph.to_code(tf.function(f))
    assert tf.autograph.to_graph(f) is f and tf.autograph.experimental.do_not_convert(f) is f
    assert tf.autograph.experimental.do_not_convert()(f) is f
    with pytest.raises(ValueError, match="__code__"):
        tf.autograph.to_code(1)
