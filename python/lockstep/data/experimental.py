"""tf.data.experimental: the auto-shard policy and distribute options, and the few helpers lockstep has."""
from .. import _unimplemented
from ._dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY  # noqa: F401
from ._options import AutoShardPolicy, AutotuneOptions, DistributeOptions, OptimizationOptions  # noqa: F401
from ._options import ThreadingOptions  # noqa: F401


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
