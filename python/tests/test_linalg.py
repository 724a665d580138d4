"""tf.linalg and tf.norm: values and gradients against TensorFlow 2.21 (GradientTape on both sides), bad input."""
import numpy as np
import pytest

from test_array_ops import agree, f32

RNG = np.random.default_rng(7)


def spd(n, batch=()):
    a = RNG.uniform(-1, 1, batch + (n, n))
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(np.float32)


def test_products(tf):
    a, b = f32(2, 3, 4), f32(2, 4, 5)
    agree(tf, lambda m, x, y: m.linalg.matmul(x, y), a, b, order=2, rtol=1e-5)
    agree(tf, lambda m, x, y: m.linalg.matmul(x, y, adjoint_a=True), f32(4, 3), f32(4, 2))
    agree(tf, lambda m, x, y: m.linalg.matvec(x, y), a, f32(2, 4))
    agree(tf, lambda m, x, y: m.linalg.matvec(x, y, transpose_a=True), f32(4, 3), f32(4))
    agree(tf, lambda m, x: m.linalg.matrix_transpose(x), a)
    agree(tf, lambda m, x: m.linalg.adjoint(x), a)
    agree(tf, lambda m, x, y: m.linalg.tensordot(x, y, 1), f32(2, 3), f32(3, 4))
    agree(tf, lambda m, x, y: m.tensordot(x, y, [[0], [1]]), f32(3, 2), f32(4, 3))


def test_diagonals(tf):
    x = f32(2, 3, 4)
    agree(tf, lambda m, a: m.linalg.diag_part(a), x, order=2)
    agree(tf, lambda m, a: m.linalg.diag_part(a, k=1), x)
    agree(tf, lambda m, d: m.linalg.diag(d), f32(2, 3))
    agree(tf, lambda m, d: m.linalg.diag(d, k=-1), f32(3))
    agree(tf, lambda m, d: m.linalg.diag(d, num_rows=3, num_cols=4), f32(3))
    agree(tf, lambda m, a, d: m.linalg.set_diag(a, d), x, f32(2, 3))
    agree(tf, lambda m, a: m.linalg.band_part(a, 1, 0), x)
    agree(tf, lambda m, a: m.linalg.band_part(a, -1, 1), x)
    agree(tf, lambda m, a: m.linalg.trace(a), x)
    agree(tf, lambda m, d: m.linalg.tensor_diag(d), f32(2, 2))
    agree(tf, lambda m, a: m.linalg.tensor_diag_part(a), f32(2, 3, 2, 3))
    with pytest.raises(tf.errors.InvalidArgumentError, match="diagonal must have shape"):
        tf.linalg.set_diag(tf.ones([3, 3]), tf.ones([2]))


def test_inverse_solve_determinants(tf):
    a = spd(3, (2,))
    agree(tf, lambda m, x: m.linalg.inv(x), a, order=2, rtol=1e-4)
    agree(tf, lambda m, x: m.linalg.inv(x, adjoint=True), a[0] + np.triu(np.ones((3, 3), np.float32)), rtol=1e-4)
    agree(tf, lambda m, x, y: m.linalg.solve(x, y), a, f32(2, 3, 2), rtol=1e-4)
    agree(tf, lambda m, x, y: m.linalg.solve(x, y, adjoint=True), a[0] + np.eye(3, k=1, dtype=np.float32), f32(3, 1),
          rtol=1e-4)
    agree(tf, lambda m, x: m.linalg.det(x), a, rtol=1e-4)
    agree(tf, lambda m, x: m.linalg.slogdet(x)[1], a, rtol=1e-4)
    agree(tf, lambda m, x: m.linalg.slogdet(x)[0], -a, grad=False)
    agree(tf, lambda m, x: m.linalg.logdet(x), a, rtol=1e-4)
    agree(tf, lambda m, x, y: m.linalg.lstsq(x, y), f32(5, 3), f32(5, 2), rtol=1e-3, atol=1e-5)
    agree(tf, lambda m, x, y: m.linalg.lstsq(x, y, l2_regularizer=0.1), f32(5, 3), f32(5, 2), rtol=1e-3, atol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="not invertible"):
        tf.linalg.inv(tf.zeros([2, 2]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="square"):
        tf.linalg.det(tf.ones([2, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32 or float64"):
        tf.linalg.inv(tf.constant([[1, 0], [0, 1]]))


def test_decompositions(tf):
    a = spd(4, (2,))
    agree(tf, lambda m, x: m.linalg.cholesky(x), a, rtol=1e-4, atol=1e-5)
    agree(tf, lambda m, x: m.linalg.eigh(x)[0], a, rtol=1e-4, atol=1e-5)
    # eigenvectors are defined up to sign: compare a sign-free function of them
    agree(tf, lambda m, x: m.square(m.linalg.eigh(x)[1]), a, rtol=1e-3, atol=1e-4)
    m34 = f32(3, 4)
    agree(tf, lambda m, x: m.linalg.svd(x, compute_uv=False), m34, grad=False, rtol=1e-4)
    agree(tf, lambda m, x: m.abs(m.linalg.svd(x)[1]), m34, grad=False, rtol=1e-4, atol=1e-5)
    agree(tf, lambda m, x: m.abs(m.linalg.qr(x)[1]), m34, grad=False, rtol=1e-4, atol=1e-5)
    agree(tf, lambda m, x: m.abs(m.linalg.qr(x, full_matrices=True)[0]), m34, grad=False, rtol=1e-4, atol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Cholesky"):
        tf.linalg.cholesky(tf.constant([[1.0, 2.0], [2.0, 1.0]]))
    x = tf.constant(m34)
    with tf.GradientTape() as t:
        t.watch(x)
        s = tf.linalg.svd(x, compute_uv=False)
    with pytest.raises(NotImplementedError, match="gradient of tf.linalg.svd"):
        t.gradient(s, x)


@pytest.mark.parametrize("ord_, axis", [("euclidean", None), ("euclidean", 1), (1, 0), (np.inf, -1), (3, 1),
                                        ("fro", [0, 1]), (1, [0, 1]), (np.inf, [-2, -1]), (2, None)])
def test_norm(tf, ord_, axis):
    x = f32(3, 4) + 2.0
    agree(tf, lambda m, a: m.norm(a, ord=ord_, axis=axis), x, rtol=1e-5)
    agree(tf, lambda m, a: m.linalg.norm(a, ord=ord_, axis=axis, keepdims=True), x, rtol=1e-5)


def test_norm_bad_input(tf):
    with pytest.raises(NotImplementedError, match="ord=2"):
        tf.norm(tf.ones([2, 2]), ord=2, axis=[0, 1])
    with pytest.raises(ValueError, match="ord"):
        tf.norm(tf.ones([2]), ord=-1)


def test_linalg_helpers(tf):
    agree(tf, lambda m, a: m.linalg.l2_normalize(a, axis=1), f32(2, 3))
    agree(tf, lambda m, a: m.linalg.normalize(a, axis=1)[0], f32(2, 3))
    agree(tf, lambda m, a, b: m.linalg.global_norm([a, b]), f32(2), f32(3))
    agree(tf, lambda m, a, b: m.linalg.cross(a, b), f32(2, 3), f32(2, 3))
    agree(tf, lambda m, a: m.linalg.pinv(a), f32(3, 2), grad=False, rtol=1e-4)
    lower = np.tril(spd(3))
    agree(tf, lambda m, a, b: m.linalg.triangular_solve(a, b), lower, f32(3, 2), grad=False, rtol=1e-4)
    agree(tf, lambda m, a, b: m.linalg.cholesky_solve(a, b), np.linalg.cholesky(spd(3)), f32(3, 2), grad=False,
          rtol=1e-4)
