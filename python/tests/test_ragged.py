"""tf.RaggedTensor and tf.ragged against TensorFlow 2.21."""
import numpy as np
import pytest
from conftest import tensorflow_or_skip

ROWS = [[3, 1, 4, 1], [], [5, 9, 2], [6], []]
NESTED = [[[1, 2]], [[3], [5, 6]]]

CASES = [
    lambda T: T.ragged.constant(ROWS),
    lambda T: T.ragged.constant(NESTED),
    lambda T: T.ragged.constant([["a"], ["b", "c"]]),
    lambda T: T.ragged.constant([[[1, 2], [3, 4]], [[5, 6]]], ragged_rank=1),
    lambda T: T.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 2, 3]),
    lambda T: T.RaggedTensor.from_row_lengths([1, 2, 3], [2, 0, 1]),
    lambda T: T.RaggedTensor.from_value_rowids([1, 2, 3], [0, 0, 2], nrows=5),
    lambda T: T.RaggedTensor.from_nested_row_splits([1, 2, 3, 4], ([0, 1, 3], [0, 2, 3, 4])),
    lambda T: T.RaggedTensor.from_uniform_row_length([1, 2, 3, 4, 5, 6], 2),
    lambda T: T.RaggedTensor.from_tensor([[1, 0, 0], [2, 3, 0]], padding=0),
    lambda T: T.RaggedTensor.from_tensor([[1, 0, 0], [2, 3, 0]], lengths=[1, 3]),
    lambda T: T.RaggedTensor.from_sparse(T.SparseTensor([[0, 0], [0, 1], [2, 0]], [1, 2, 3], [3, 4])),
    lambda T: T.ragged.constant(ROWS)[:, 1:3],
    lambda T: T.ragged.constant(ROWS)[1:3],
    lambda T: T.ragged.constant(NESTED)[:, 1:],
    lambda T: T.ragged.constant(NESTED).merge_dims(1, 2),
    lambda T: T.ragged.constant(NESTED).merge_dims(0, 1),
    lambda T: T.ragged.range([3, 5, 2]),
    lambda T: T.ragged.range([0., 2.], 5., 1.5),
    lambda T: T.ragged.stack([T.ragged.constant(ROWS), T.ragged.constant(ROWS)], axis=1),
    lambda T: T.ragged.stack([T.constant([1, 2]), T.constant([3])]),
    lambda T: T.ragged.boolean_mask(T.ragged.constant(ROWS), T.ragged.constant(ROWS) > 2),
    lambda T: T.ragged.boolean_mask(T.constant([[1, 2], [3, 4]]), T.constant([[True, False], [True, True]])),
    lambda T: T.ragged.constant(ROWS) + T.constant([[1], [2], [3], [4], [5]]),
    lambda T: T.ragged.constant(ROWS) * 2 - T.ragged.constant(ROWS),
    lambda T: T.ragged.constant(ROWS) == 1,
    lambda T: T.ragged.constant(ROWS) ** 2,
    lambda T: T.ragged.constant([[[1, 2]], [[3, 4], [5, 6]]], ragged_rank=1) + T.constant([10, 20]),
    lambda T: T.ragged.map_flat_values(T.ones_like, T.ragged.constant(ROWS)),
    lambda T: T.ragged.constant(ROWS).with_flat_values(T.ragged.constant(ROWS).flat_values * 2),
    lambda T: T.ragged.constant(NESTED).row_lengths(axis=2),
]

VALUES = [
    lambda T: T.ragged.constant(NESTED).to_tensor(),
    lambda T: T.ragged.constant(ROWS).to_tensor(default_value=-1, shape=[3, 2]),
    lambda T: T.ragged.constant(ROWS).bounding_shape(),
    lambda T: T.ragged.constant(ROWS).row_lengths(),
    lambda T: T.ragged.constant(ROWS).value_rowids(),
    lambda T: T.ragged.constant(ROWS).nrows(),
    lambda T: T.ragged.constant(ROWS).row_splits,
    lambda T: T.sparse.to_dense(T.ragged.constant(NESTED).to_sparse()),
    lambda T: T.experimental.RowPartition.from_row_lengths([2, 0, 1]).row_splits(),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_ragged_agrees_with_tensorflow(tf, case):
    real = tensorflow_or_skip()
    ours, theirs = CASES[case](tf), CASES[case](real)
    assert repr(ours) == repr(theirs)
    assert ours.to_list() == theirs.to_list()
    assert ours.shape.as_list() == theirs.shape.as_list()


@pytest.mark.parametrize("case", range(len(VALUES)))
def test_values_agree_with_tensorflow(tf, case):
    real = tensorflow_or_skip()
    np.testing.assert_array_equal(VALUES[case](tf).numpy(), VALUES[case](real).numpy())


def test_spec_and_partition_text(tf):
    from lockstep import _ragged

    rt = tf.ragged.constant(ROWS)
    assert repr(tf.RaggedTensorSpec.from_value(rt)) == "RaggedTensorSpec(TensorShape([5, None]), tf.int32, 1, tf.int64)"
    assert repr(_ragged.DynamicRaggedShape.from_lengths([4, (2, 1, 0, 2)])) == (
        "<DynamicRaggedShape lengths=[4, (2, 1, 0, 2)] num_row_partitions=1>")
    assert repr(_ragged.RowPartition.from_row_lengths([2, 0, 1])) == "tf.RowPartition(row_splits=[0 2 2 3])"


@pytest.mark.parametrize("make", [
    lambda tf: tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 1]),
    lambda tf: tf.RaggedTensor.from_row_splits([1, 2, 3], [1, 2, 3]),
    lambda tf: tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2, 4]),
    lambda tf: tf.RaggedTensor.from_value_rowids([1, 2, 3], [0, 2, 1]),
    lambda tf: tf.ragged.constant(ROWS) + tf.ragged.constant([[1], [], [5, 9, 2], [6], []]),
    lambda tf: tf.ragged.constant(ROWS)[1, 0],
])
def test_bad_input_is_invalid_argument(tf, make):
    with pytest.raises(tf.errors.InvalidArgumentError):
        make(tf)


def test_bad_nesting_and_inner_index(tf):
    with pytest.raises(ValueError, match="nesting depth"):
        tf.ragged.constant([[1, [2]]])
    with pytest.raises(ValueError, match="inner ragged"):
        tf.ragged.constant(ROWS)[:, 0]
    with pytest.raises(ValueError, match="private"):
        tf.RaggedTensor([1], None)


def test_to_tensor_gradient(tf):
    v = tf.Variable([1., 2., 3.])
    with tf.GradientTape() as g:
        y = tf.reduce_sum(tf.RaggedTensor.from_row_lengths(v, [2, 0, 1]).to_tensor() * 2.0)
    np.testing.assert_allclose(g.gradient(y, v).numpy(), [2., 2., 2.])
