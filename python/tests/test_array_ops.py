"""tf.* tensor ops, tf.math, tf.nn and tf.signal additions, tf.custom_gradient: values and gradients against
TensorFlow 2.21 (GradientTape on both sides), and bad input."""
import numpy as np
import pytest

from conftest import tensorflow_or_skip

RNG = np.random.default_rng(36)


def _values(tf, fn, arrays):
    return [np.asarray(v) for v in _flat(fn(tf, *[tf.constant(a) for a in arrays]))]


def _flat(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _gradients(tf, fn, arrays, order=1):
    """The gradient (order 1) or the gradient of the gradient's weighted sum (order 2) of a weighted sum of fn's
    first output, with respect to each float input."""
    xs = [tf.constant(a) for a in arrays]
    floats = [x for x, a in zip(xs, arrays) if np.asarray(a).dtype.kind == "f"]
    with tf.GradientTape(persistent=True) as outer:
        outer.watch(floats)
        with tf.GradientTape() as inner:
            inner.watch(floats)
            y = _flat(fn(tf, *xs))[0]
            w = np.linspace(0.5, 1.5, int(np.prod(y.shape))).reshape(y.shape).astype(y.dtype.as_numpy_dtype)
            loss = tf.reduce_sum(y * tf.constant(w))
        grads = inner.gradient(loss, floats)
        if order == 2:
            total = tf.add_n([tf.reduce_sum(g * g) for g in grads if g is not None])
    if order == 2:
        grads = outer.gradient(total, floats)
    return [None if g is None else np.asarray(tf.convert_to_tensor(g)) for g in grads]  # (TF's IndexedSlices)


def agree(tf, fn, *arrays, grad=True, order=1, rtol=1e-5, atol=1e-6):
    real = tensorflow_or_skip()
    for ours, theirs in zip(_values(tf, fn, arrays), _values(real, fn, arrays)):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
        assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    if grad:
        for o in range(1, order + 1):
            ours, theirs = _gradients(tf, fn, arrays, o), _gradients(real, fn, arrays, o)
            for g, h in zip(ours, theirs):
                assert (g is None) == (h is None)
                if g is not None:
                    np.testing.assert_allclose(g, h, rtol=rtol * 10, atol=atol * 10)


def f32(*shape, low=-1.0, high=1.0):
    return RNG.uniform(low, high, shape).astype(np.float32)


UNARY = {
    "sin": (-2, 2), "cos": (-2, 2), "tan": (-1, 1), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atan": (-3, 3),
    "sinh": (-2, 2), "cosh": (-2, 2), "asinh": (-3, 3), "acosh": (1.2, 3), "atanh": (-0.9, 0.9), "log1p": (-0.5, 3),
    "expm1": (-2, 2), "erf": (-2, 2), "erfc": (-2, 2), "lgamma": (0.2, 5), "digamma": (0.3, 6), "softsign": (-3, 3),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_values_and_gradients(tf, name):
    low, high = UNARY[name]
    # (digamma's second derivative would need polygamma(2, x), which lockstep lacks; TF has none for softsign)
    agree(tf, lambda m, x: getattr(m.math, name)(x), f32(3, 4, low=low, high=high), order=1 if name == "digamma"
          else 1 if name == "softsign" else 2, rtol=2e-5)


def test_unary_math_float64_and_negative_lgamma(tf):
    agree(tf, lambda m, x: m.math.lgamma(x), np.array([-2.5, -0.5, 0.5, 7.5]), rtol=1e-9)
    agree(tf, lambda m, x: m.math.digamma(x), np.array([-2.5, -0.3, 0.5, 20.0]), rtol=1e-7)


def test_binary_math(tf):
    x, y = f32(3, 1, low=-2, high=2), f32(4, low=0.1, high=2)
    agree(tf, lambda m, a, b: m.math.atan2(a, b), x, y, order=2)
    agree(tf, lambda m, a, b: m.math.xlogy(a, b), np.array([0.0, 1.5, 2.0], np.float32), np.array([0.0, 2.0, 0.5],
                                                                                                  np.float32))
    agree(tf, lambda m, a, b: m.math.xdivy(a, b), np.array([0.0, 1.5, 2.0], np.float32), np.array([0.0, 2.0, 0.5],
                                                                                                  np.float32))
    agree(tf, lambda m, a, b: m.math.floormod(a, b), np.array([5.5, -5.5, 3.0], np.float32),
          np.array([2.0, 2.0, -2.0], np.float32))


def test_integer_floor_division_and_remainder(tf):
    a = np.array([7, -7, 7, -7, 0], np.int64)
    b = np.array([3, 3, -3, -3, 5], np.int64)
    real = tensorflow_or_skip()
    for op in (lambda m, x, y: x // y, lambda m, x, y: x % y, lambda m, x, y: m.math.floordiv(x, y),
               lambda m, x, y: m.math.floormod(x, y), lambda m, x, y: m.truncatediv(x, y),
               lambda m, x, y: m.truncatemod(x, y), lambda m, x, y: x // 2):
        for dtype in (np.int32, np.int64):
            ours = op(tf, tf.constant(a.astype(dtype)), tf.constant(b.astype(dtype)))
            theirs = op(real, real.constant(a.astype(dtype)), real.constant(b.astype(dtype)))
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
            assert ours.dtype.name == theirs.dtype.name
    with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
        tf.constant([1], tf.int64) // tf.constant([0], tf.int64)


def test_scans_and_reductions(tf):
    x = f32(3, 4, low=0.5, high=1.5)
    for exclusive in (False, True):
        for reverse in (False, True):
            agree(tf, lambda m, a: m.math.cumsum(a, 1, exclusive, reverse), x, order=2)
            agree(tf, lambda m, a: m.math.cumprod(a, 0, exclusive, reverse), x, rtol=1e-5)
            agree(tf, lambda m, a: m.math.cumulative_logsumexp(a, 1, exclusive, reverse), x, rtol=1e-5)
    agree(tf, lambda m, a: m.cumsum(a), np.arange(5, dtype=np.int32), grad=False)
    agree(tf, lambda m, a: m.reduce_logsumexp(a, axis=1, keepdims=True), x * 30)
    agree(tf, lambda m, a: m.math.reduce_logsumexp(a), x)
    agree(tf, lambda m, a: m.math.reduce_euclidean_norm(a, 0), x)
    agree(tf, lambda m, a: m.math.count_nonzero(a, 1), np.array([[0, 1, 2], [0, 0, 3]], np.int32), grad=False)
    agree(tf, lambda m, a: m.math.bincount(a, minlength=6), np.array([1, 1, 4, 0], np.int32), grad=False)
    agree(tf, lambda m, a: m.math.polyval([m.constant(2.0), m.constant(-1.0), m.constant(0.5)], a), x)


def test_segments(tf):
    data = f32(5, 2)
    ids = np.array([0, 0, 1, 3, 3], np.int32)
    for name in ("segment_sum", "segment_mean", "segment_max"):
        agree(tf, lambda m, d, i: getattr(m.math, name)(d, i), data, ids)
    unsorted = np.array([2, 0, -1, 2, 1], np.int32)
    for name in ("unsorted_segment_sum", "unsorted_segment_mean", "unsorted_segment_max"):
        agree(tf, lambda m, d, i: getattr(m.math, name)(d, i, 4), data, unsorted)
    with pytest.raises(tf.errors.InvalidArgumentError, match="sorted"):
        tf.math.segment_sum(tf.constant(data), tf.constant([1, 0, 0, 0, 0]))


def test_top_k(tf):
    x = f32(3, 6)
    agree(tf, lambda m, a: m.math.top_k(a, 3).values, x)
    agree(tf, lambda m, a: m.nn.top_k(a, k=2)[1], x, grad=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="k=7"):
        tf.math.top_k(tf.constant(x), 7)


def test_real_imag_conj(tf):
    x = f32(2, 3)
    agree(tf, lambda m, a: m.math.real(a), x)
    agree(tf, lambda m, a: m.math.imag(a), x, grad=False)
    agree(tf, lambda m, a: m.math.conj(a), x)
    with pytest.raises(NotImplementedError, match="complex64"):
        tf.math.real(np.array([1 + 2j]))


def test_einsum(tf):
    a, b, c = f32(2, 3), f32(3, 4), f32(2, 5, 3)
    agree(tf, lambda m, x, y: m.einsum("ij,jk->ik", x, y), a, b, order=2)
    agree(tf, lambda m, x, y: m.linalg.einsum("ij,jk", x, y), a, b)
    agree(tf, lambda m, x: m.einsum("ij->", x), a, order=2)
    agree(tf, lambda m, x, y: m.einsum("bij,kj->bik", x, y), c, f32(4, 3))
    agree(tf, lambda m, x, y: m.einsum("...j,jk->...k", x, y), c, b)
    agree(tf, lambda m, x, y: m.einsum("ij,kl->ijkl", x, y), a, b)
    agree(tf, lambda m, x: m.einsum("ii->i", x), f32(3, 3), grad=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="index 'j'"):
        tf.einsum("ij,jk->ik", tf.ones([2, 3]), tf.ones([2, 3]))
    with pytest.raises(ValueError, match="operands"):
        tf.einsum("ij,jk->ik", tf.ones([2, 3]))


def test_eye_and_meshgrid(tf):
    agree(tf, lambda m: m.eye(3), grad=False)
    agree(tf, lambda m: m.eye(2, 4, batch_shape=[3], dtype=m.int32), grad=False)
    agree(tf, lambda m: m.linalg.eye(2, dtype=m.float64), grad=False)
    x, y = f32(3), f32(4)
    for indexing in ("xy", "ij"):
        agree(tf, lambda m, a, b: m.meshgrid(a, b, indexing=indexing)[0], x, y)
        agree(tf, lambda m, a, b: m.meshgrid(a, b, indexing=indexing)[1], x, y)


def test_gather_family(tf):
    params = f32(3, 4, 2)
    agree(tf, lambda m, p: m.gather_nd(p, [[0, 1], [2, 3]]), params, order=2)
    agree(tf, lambda m, p: m.gather_nd(p, [[[1]], [[0]], [[1]]], batch_dims=1), params)
    agree(tf, lambda m, p: m.gather(p, [[1, 0], [3, 3], [0, 2]], axis=1, batch_dims=1), params)
    agree(tf, lambda m, p: m.gather(p, [1, 1, 0], axis=2), params)
    agree(tf, lambda m, p: m.gather(p, [2, 0]), params)
    agree(tf, lambda m, p: m.gather(p, [2, 0]), np.arange(4, dtype=np.int32), grad=False)
    agree(tf, lambda m, p: m.boolean_mask(p, [True, False, True]), params)
    agree(tf, lambda m, p: m.boolean_mask(p, [[True, False, True, True]] * 3), params)
    agree(tf, lambda m, p: m.nn.embedding_lookup(p, [2, 0, 2]), params)
    with pytest.raises(tf.errors.InvalidArgumentError, match="index 5"):
        tf.gather_nd(tf.constant(params), [[5, 0]])
    with pytest.raises(tf.errors.InvalidArgumentError, match="index 4"):
        tf.gather(tf.constant(params), [4])


def test_scatters(tf):
    t = f32(4, 3)
    u = f32(2, 3)
    for kind in ("add", "update", "sub", "min", "max"):
        agree(tf, lambda m, a, b: getattr(m, f"tensor_scatter_nd_{kind}")(a, [[3], [1]], b), t, u)
    agree(tf, lambda m, a: m.tensor_scatter_nd_add(a, [[0, 0], [0, 0]], [1, 2]), np.zeros((2, 2), np.int32),
          grad=False)
    agree(tf, lambda m, b: m.scatter_nd([[1], [3], [1]], b, [5, 3]), f32(3, 3))
    with pytest.raises(tf.errors.InvalidArgumentError, match="updates of shape"):
        tf.tensor_scatter_nd_add(tf.constant(t), [[0]], tf.ones([2, 3]))


def test_reordering(tf):
    x = f32(3, 4)
    for mode in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        agree(tf, lambda m, a: m.pad(a, [[1, 2], [2, 1]], mode), x, order=2)
    agree(tf, lambda m, a: m.pad(a, [[1, 0], [0, 1]], constant_values=7), np.ones((2, 2), np.int32), grad=False)
    agree(tf, lambda m, a: m.roll(a, [1, -1], [0, 1]), x)
    agree(tf, lambda m, a: m.roll(a, 2, 1), x)
    agree(tf, lambda m, a: m.repeat(a, [1, 0, 3], axis=0), x)
    agree(tf, lambda m, a: m.repeat(a, 2), x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="REFLECT"):
        tf.pad(tf.constant(x), [[3, 0], [0, 0]], "REFLECT")
    with pytest.raises(ValueError, match="mode"):
        tf.pad(tf.constant(x), [[1, 0], [0, 0]], "WRAP")


def test_casts_and_lookups(tf):
    agree(tf, lambda m, a: m.round(a), np.array([0.5, 1.5, 2.5, -0.5, 1.2], np.float32), grad=False)
    agree(tf, lambda m, a: m.saturate_cast(a, m.uint8), np.array([-3.0, 100.5, 300.0], np.float32), grad=False)
    agree(tf, lambda m, a: m.saturate_cast(a, m.int32), np.array([-1e10, 5.0, 3e9], np.float32), grad=False)
    agree(tf, lambda m, a: m.unique(a)[0], np.array([4, 1, 4, 2, 1], np.int32), grad=False)
    agree(tf, lambda m, a: m.unique_with_counts(a), np.array([4, 1, 4, 2, 1], np.int32), grad=False)
    agree(tf, lambda m, s, v: m.searchsorted(s, v, side="right"), np.array([[1, 3, 3, 5]], np.float32),
          np.array([[3, 0, 6]], np.float32), grad=False)
    agree(tf, lambda m, v: m.histogram_fixed_width(v, [0.0, 5.0], nbins=5),
          np.array([-1.0, 0.0, 1.5, 2.0, 5.0, 15.0], np.float32), grad=False)
    with pytest.raises(tf.errors.InvalidArgumentError, match="1-D"):
        tf.unique(tf.ones([2, 2]))


def test_dtype_errors_match_tensorflow(tf):
    real = tensorflow_or_skip()
    for m in (tf, real):
        with pytest.raises(m.errors.InvalidArgumentError):
            m.math.sin(m.constant([1]))
        with pytest.raises(m.errors.InvalidArgumentError):
            m.math.atan2(m.constant([1.0]), m.constant([1.0], m.float64))


def test_nn_moments_and_normalization(tf):
    x = f32(4, 3, 2)
    agree(tf, lambda m, a: m.nn.moments(a, [0, 1])[1], x, order=2)
    agree(tf, lambda m, a: m.nn.moments(a, [0], keepdims=True)[0], x)
    agree(tf, lambda m, a, w: m.nn.weighted_moments(a, [0], w)[1], x, f32(4, 1, 1, low=0.5, high=1))
    agree(tf, lambda m, a, mu, var, off, sc: m.nn.batch_normalization(a, mu, var, off, sc, 1e-3), x, f32(2),
          f32(2, low=0.5, high=1), f32(2), f32(2))
    agree(tf, lambda m, c, s, v: m.nn.normalize_moments(c, s, v, None)[1], np.float32(4.0), f32(3), f32(3, low=2,
                                                                                                    high=3))


def test_nn_convolution(tf):
    agree(tf, lambda m, x, f: m.nn.convolution(x, f, padding="SAME"), f32(2, 7, 3), f32(3, 3, 4), rtol=1e-4)
    agree(tf, lambda m, x, f: m.nn.convolution(x, f, strides=2), f32(1, 6, 6, 2), f32(3, 3, 2, 2), rtol=1e-4)
    with pytest.raises(NotImplementedError, match="dilations"):
        tf.nn.convolution(tf.ones([1, 4, 4, 1]), tf.ones([2, 2, 1, 1]), dilations=2)


def test_signal(tf):
    agree(tf, lambda m: m.signal.hann_window(8), grad=False)
    agree(tf, lambda m: m.signal.hamming_window(5, periodic=False), grad=False)
    x = f32(2, 10)
    agree(tf, lambda m, a: m.signal.frame(a, 4, 3), x)
    agree(tf, lambda m, a: m.signal.frame(a, 4, 3, pad_end=True), x)
    agree(tf, lambda m, a: m.signal.overlap_and_add(a, 2), f32(2, 3, 4))
    with pytest.raises(NotImplementedError, match="complex64"):
        tf.signal.rfft(tf.ones([8]))


def test_custom_gradient(tf):
    real = tensorflow_or_skip()

    def make(m):
        @m.custom_gradient
        def clip_gradient(x, y):
            def grad(upstream):
                return m.clip_by_value(upstream, -0.1, 0.1) * y, upstream * x

            return x * y, grad

        return clip_gradient

    a, b = f32(3), f32(3)
    for m in (tf, real):
        f = make(m)
        xa, xb = m.constant(a), m.constant(b)
        with m.GradientTape() as t:
            t.watch([xa, xb])
            out = m.reduce_sum(f(xa, xb) * 3.0)
        got = [g.numpy() for g in t.gradient(out, [xa, xb])]
        if m is tf:
            ours = got
    np.testing.assert_allclose(ours[0], got[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], got[1], rtol=1e-6)


def test_custom_gradient_with_variables_and_nested_outputs(tf):
    real = tensorflow_or_skip()
    results = []
    for m in (tf, real):
        v = m.Variable([2.0, 3.0])

        @m.custom_gradient
        def f(x):
            def grad(dy, dz, variables=None):
                return dy * 10.0 + dz, [dy * x * 0.5]

            return (x * v, m.reduce_sum(x)), grad

        x = m.constant([1.0, 4.0])
        with m.GradientTape() as t:
            t.watch(x)
            y, z = f(x)
            loss = m.reduce_sum(y) + 2.0 * z
        results.append([g.numpy() for g in t.gradient(loss, [x, v])])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs)


def test_custom_gradient_bad_gradient_count(tf):
    @tf.custom_gradient
    def f(x):
        return x * 2.0, lambda dy: [dy, dy]

    x = tf.constant([1.0])
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    with pytest.raises(ValueError, match="2 gradients for 1 inputs"):
        t.gradient(y, x)


def test_record_gradient_from_another_thread(tf):
    import threading

    ops = tf._lockstep.ops
    x = tf.constant([1.0, 2.0])
    result = []

    def run():
        with tf.GradientTape() as t:
            t.watch(x)
            y = ops.stop_gradient(x * 3.0)
            ops.record_gradient([x], y, lambda dy: [dy * 5.0])
            loss = tf.reduce_sum(y)
        result.append(t.gradient(loss, x).numpy())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    np.testing.assert_allclose(result[0], [5.0, 5.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="one of its inputs"):
        ops.record_gradient([x], x, lambda dy: [dy])


def test_ops_on_keras_symbolic_tensors_become_layers(tf):
    x = tf.keras.Input((3,))
    y = tf.einsum("bi,ij->bj", tf.math.sin(x), np.ones((3, 2), np.float32))
    out = tf.pad(y, [[0, 0], [1, 1]]) + tf.reduce_sum(tf.cumsum(x, axis=1), axis=1, keepdims=True)
    model = tf.keras.Model(x, out)
    data = f32(2, 3)
    want = np.pad(np.sin(data) @ np.ones((3, 2)), [[0, 0], [1, 1]]) + np.cumsum(data, 1).sum(1, keepdims=True)
    np.testing.assert_allclose(model(data).numpy(), want, rtol=1e-5)
