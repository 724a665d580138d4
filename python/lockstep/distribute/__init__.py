"""tf.distribute over lockstep's C++ strategies (lockstep/distribute/strategy/strategy.h): MirroredStrategy
(replicas on threads of this process), MultiWorkerMirroredStrategy (one process per worker, from TF_CONFIG), the
default strategy, distributed datasets and the replica context."""
from .. import _unimplemented
from . import cluster_resolver, experimental  # noqa: F401
from ._strategy import (CrossDeviceOps, HierarchicalCopyAllReduce, NcclAllReduce,  # noqa: F401
                        ReductionToOneDevice)
from ._strategy import (DistributedDataset, DistributedIterator, DistributedValues, InputContext,  # noqa: F401
                        InputOptions, MirroredStrategy, MultiWorkerMirroredStrategy, OneDeviceStrategy, ReduceOp,
                        ReplicaContext, Strategy, StrategyExtended, experimental_set_strategy, get_replica_context,
                        get_strategy, has_strategy, in_cross_replica_context)

_unimplemented.install(globals(), "tf.distribute")
