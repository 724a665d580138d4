"""tf.sparse: the ops over tf.SparseTensor (lockstep/_sparse.py)."""
from . import _unimplemented
from ._sparse import (SparseTensor, add, concat, expand_dims, fill_empty_rows, from_dense,  # noqa: F401
                      map_values, reduce_max, reduce_sum, reorder, reshape, retain, slice, sparse_dense_matmul,
                      to_dense, to_indicator, transpose)

_unimplemented.install(globals(), "tf.sparse")
