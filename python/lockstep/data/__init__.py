"""tf.data: input pipelines over lockstep's C++ pipeline (see _dataset.py)."""
from .. import _unimplemented
from . import experimental
from ._dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset  # noqa: F401
from ._dataset import _Iterator as Iterator, _NumpyIterator as NumpyIterator  # noqa: F401
from ._options import Options, ThreadingOptions  # noqa: F401
from ._readers import TextLineDataset, TFRecordDataset  # noqa: F401

_unimplemented.install(globals(), "tf.data")
