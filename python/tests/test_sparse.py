"""tf.SparseTensor and tf.sparse against TensorFlow 2.21."""
import numpy as np
import pytest
from conftest import tensorflow_or_skip


def _both(tf, real, f):
    return f(tf), f(real)


def _dense(x):
    return np.asarray(x.numpy())


CASES = [
    lambda T: T.sparse.to_dense(T.SparseTensor([[0, 0], [1, 2]], [1, 2], [3, 4])),
    lambda T: T.sparse.to_dense(T.sparse.add(T.SparseTensor([[0, 0], [1, 2]], [1., 2.], [3, 4]),
                                             T.SparseTensor([[0, 0], [2, 3]], [3., 4.], [3, 4]))),
    lambda T: T.sparse.to_dense(T.sparse.concat(1, [T.SparseTensor([[0, 0]], [1.], [2, 2]),
                                                    T.SparseTensor([[1, 1]], [2.], [2, 3])])),
    lambda T: T.sparse.to_dense(T.sparse.transpose(T.SparseTensor([[0, 3], [2, 0]], [1., 2.], [3, 4]))),
    lambda T: T.sparse.reduce_sum(T.SparseTensor([[0, 3], [2, 0], [0, 1]], [1., 2., 3.], [3, 4]), 1),
    lambda T: T.sparse.reduce_max(T.SparseTensor([[0, 0], [0, 2]], [-1., -2.], [2, 3]), 0),
    lambda T: T.sparse.to_dense(T.sparse.slice(T.SparseTensor([[0, 3], [2, 0], [1, 1]], [1, 2, 3], [3, 4]),
                                               [0, 1], [2, 5])),
    lambda T: T.sparse.to_dense(T.sparse.reshape(T.SparseTensor([[0, 3], [2, 0]], [1, 2], [3, 4]), [2, -1])),
    lambda T: T.sparse.to_dense(T.sparse.fill_empty_rows(T.SparseTensor([[0, 1]], [5], [3, 2]), -1)[0]),
    lambda T: T.sparse.to_indicator(T.SparseTensor([[0, 0], [0, 1], [1, 0]], [1, 3, 0], [2, 4]), 4),
    lambda T: T.sparse.sparse_dense_matmul(T.SparseTensor([[0, 0], [1, 2]], [1., 2.], [2, 3]), T.ones([3, 2])),
    lambda T: T.sparse.to_dense(T.sparse.from_dense(T.constant([[0, 1], [2, 0]]))),
    lambda T: T.sparse.to_dense(T.sparse.map_values(T.math.multiply, T.SparseTensor([[0, 1]], [3.], [2, 2]),
                                                    T.SparseTensor([[0, 1]], [3.], [2, 2]))),
    lambda T: T.sparse.to_dense(T.sparse.reorder(T.SparseTensor([[1, 0], [0, 0]], [1, 2], [2, 2]))),
    lambda T: T.sparse.to_dense(T.sparse.retain(T.SparseTensor([[1, 0], [0, 1]], [1, 2], [2, 2]), [True, False])),
    lambda T: T.sparse.to_dense(T.sparse.expand_dims(T.SparseTensor([[1, 0]], [1], [2, 2]), 1)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_agrees_with_tensorflow(tf, case):
    real = tensorflow_or_skip()
    ours, theirs = _both(tf, real, CASES[case])
    np.testing.assert_allclose(_dense(ours), _dense(theirs))


@pytest.mark.parametrize("indices,word", [([[0, 0], [5, 0]], "out of bounds"), ([[1, 0], [0, 0]], "out of order"),
                                          ([[0, 0], [0, 0]], "repeated")])
def test_to_dense_bad_indices(tf, indices, word):
    with pytest.raises(tf.errors.InvalidArgumentError, match=word):
        tf.sparse.to_dense(tf.SparseTensor(indices, [1., 2.], [3, 4]))


def test_bad_construction(tf):
    with pytest.raises(ValueError):
        tf.SparseTensor([[0, 0]], [1., 2.], [3, 4])
    with pytest.raises(TypeError):
        tf.sparse.to_dense([[1, 2]])


def test_to_dense_gradient(tf):
    v = tf.Variable([1., 2.])
    with tf.GradientTape() as g:
        y = tf.reduce_sum(tf.sparse.to_dense(tf.SparseTensor([[0, 0], [1, 2]], v, [3, 4])) * 3.0)
    np.testing.assert_allclose(g.gradient(y, v).numpy(), [3., 3.])


def test_repr_and_io_class(tf):
    st = tf.sparse.SparseTensor([[0, 0], [1, 2]], [1, 2], [3, 4])
    assert repr(st).startswith("SparseTensor(indices=tf.Tensor(\n[[0 0]\n [1 2]], shape=(2, 2), dtype=int64)")
    assert tf.io.SparseTensor is tf.SparseTensor is tf.sparse.SparseTensor
