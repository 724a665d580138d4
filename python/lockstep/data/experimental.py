"""tf.data.experimental: the auto-shard policy and distribute options, and the few helpers lockstep has."""
from .. import _unimplemented
from ..dtypes import string
from ._structure import TensorSpec
from ._dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY  # noqa: F401
from ._options import AutoShardPolicy, AutotuneOptions, DistributeOptions, OptimizationOptions  # noqa: F401
from ._options import ThreadingOptions  # noqa: F401


class TFRecordWriter:
    """Writes a dataset of tf.string scalars to a TFRecord file, as tf.data.experimental.TFRecordWriter."""

    def __init__(self, filename, compression_type=None):
        from ._readers import compression_name

        self._filename, self._compression = filename, compression_name(compression_type)

    def write(self, dataset):
        from .._lockstep import io
        from ._structure import StringTensor

        if not isinstance(dataset.element_spec, TensorSpec) or dataset.element_spec.dtype != string:
            raise TypeError(f"TFRecordWriter.write: the dataset's elements must be tf.string scalars, got "
                            f"{dataset.element_spec}")
        writer = io.TFRecordWriter(str(self._filename), self._compression)
        for record in dataset:
            writer.write(bytes(record) if isinstance(record, StringTensor) else record)
        writer.close()


def cardinality(dataset):
    return dataset.cardinality()


def get_structure(dataset_or_iterator):
    return dataset_or_iterator.element_spec


def unbatch():
    return lambda dataset: dataset.unbatch()


def enumerate_dataset(start=0):
    return lambda dataset: dataset.enumerate(start)


def get_single_element(dataset):
    return dataset.get_single_element()


_unimplemented.install(globals(), "tf.data.experimental")
