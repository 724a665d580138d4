"""tf.distribute's strategies over lockstep's C++ ones: scope, run, reduce, distributed datasets, the replica
context. Values that differ per local replica are PerReplica; with one local replica (MultiWorkerMirroredStrategy,
the default strategy) they are plain values, as in TensorFlow."""
import atexit as _atexit
import contextlib as _contextlib
import enum as _enum
import logging as _logging
import sys as _sys
import weakref as _weakref

from .. import _lockstep, _nest
from . import cluster_resolver as _resolvers

_cpp = _lockstep.distribute
_cpp_config = _lockstep.config
_ops = _lockstep.ops


class ReduceOp(_enum.Enum):
    """How values from different replicas are combined."""

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        name = str(getattr(aggregation, "name", aggregation)).upper()
        if name in ("SUM", "MEAN"):
            return ReduceOp[name]
        raise ValueError(f"Could not convert from `tf.VariableAggregation` {aggregation} to `tf.distribute.ReduceOp` "
                         "type")


def _reduce_op(op):
    if isinstance(op, str):
        op = ReduceOp(op.upper())
    if not isinstance(op, ReduceOp):
        raise ValueError(f"reduce_op must be a tf.distribute.ReduceOp or 'SUM'/'MEAN', got {op!r}")
    return op


class CommunicationImplementation(_enum.Enum):
    """Cross-worker collectives: RING is lockstep's ring over TCP (UCX); NCCL is NCCL between workers on GPUs
    (docs/gpu.md) and runs as RING for workers on the CPU (as TensorFlow runs NCCL-hinted collectives on CPU
    tensors); MPI is a lockstep extension."""

    AUTO = "AUTO"
    RING = "RING"
    NCCL = "NCCL"
    MPI = "MPI"


CollectiveCommunication = CommunicationImplementation


class CommunicationOptions:
    """Options for cross-worker collectives (tf.distribute.experimental.CommunicationOptions)."""

    def __init__(self, bytes_per_pack=0, timeout_seconds=None, implementation=CommunicationImplementation.AUTO):
        if bytes_per_pack < 0:
            raise ValueError(f"bytes_per_pack must be non-negative, got {bytes_per_pack}")
        if isinstance(implementation, str):
            implementation = CommunicationImplementation(implementation.upper())
        if not isinstance(implementation, CommunicationImplementation):
            raise ValueError("implementation should be a tf.distribute.experimental.CommunicationImplementation, got "
                             f"{implementation!r}")
        if timeout_seconds is not None and timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive or None, got {timeout_seconds}")
        self.bytes_per_pack = bytes_per_pack
        self.timeout_seconds = timeout_seconds
        self.implementation = implementation

    def __str__(self):
        return (f"Options(bytes_per_pack={self.bytes_per_pack},timeout_seconds={self.timeout_seconds}, "
                f"implementation={self.implementation})")

    def _to_cpp(self):
        o = _cpp._CommunicationOptions()
        implementation = self.implementation
        if implementation is CommunicationImplementation.NCCL and not _cpp_config.default_device().startswith("/gpu"):
            _logging.getLogger("lockstep").warning(
                "CommunicationImplementation.NCCL needs GPUs, and this worker runs on the CPU: using RING")
            implementation = CommunicationImplementation.RING
        o.implementation = getattr(_cpp._CommunicationImplementation, implementation.name)
        o.bytes_per_pack = int(self.bytes_per_pack)
        o.timeout_seconds = float(self.timeout_seconds or 0)
        return o

    def merge(self, options):
        merged = CommunicationOptions(self.bytes_per_pack, self.timeout_seconds, self.implementation)
        for name, default in (("bytes_per_pack", 0), ("timeout_seconds", None),
                              ("implementation", CommunicationImplementation.AUTO)):
            value = getattr(options, name)
            if value != default:
                setattr(merged, name, value)
        return merged


class InputOptions:
    """tf.distribute.InputOptions: lockstep's distributed input always prefetches on the host; the options are
    accepted and kept for programs that read them back."""

    def __init__(self, experimental_fetch_to_device=None, experimental_replication_mode=None,
                 experimental_place_dataset_on_device=False, experimental_per_replica_buffer_size=1):
        self.experimental_fetch_to_device = experimental_fetch_to_device
        self.experimental_replication_mode = experimental_replication_mode
        self.experimental_place_dataset_on_device = experimental_place_dataset_on_device
        self.experimental_per_replica_buffer_size = experimental_per_replica_buffer_size


InputContext = _cpp.InputContext


class ValueContext:
    """What experimental_distribute_values_from_function passes to its function for each replica."""

    def __init__(self, replica_id_in_sync_group=0, num_replicas_in_sync=1):
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync

    def __repr__(self):
        return (f"tf.distribute.experimental.ValueContext(replica_id_in_sync_group={self.replica_id_in_sync_group}, "
                f"num_replicas_in_sync={self.num_replicas_in_sync})")


# ---- distributed values ----

class DistributedValues:
    """One value per local replica."""

    def __init__(self, values):
        self._values = tuple(values)

    @property
    def values(self):
        return self._values

    def __repr__(self):
        body = ",\n".join(f"  {i}: {v!r}" for i, v in enumerate(self._values))
        return f"{type(self).__name__}:{{\n{body}\n}}"

    __str__ = __repr__


class PerReplica(DistributedValues):
    """Values that differ from replica to replica: what strategy.run returns and distributed datasets yield."""


def _select(structure, replica):
    """`structure` as replica `replica` sees it: each PerReplica replaced by that replica's value."""
    return _nest.map_structure(lambda v: v.values[replica] if isinstance(v, DistributedValues) else v, structure)


def _regroup(per_replica_results):
    """One structure of PerReplica leaves from one structure per replica; plain values with one replica."""
    if len(per_replica_results) == 1:
        return per_replica_results[0]
    first = per_replica_results[0]
    flats = [_nest.flatten(r) for r in per_replica_results]
    leaves = []
    for values in zip(*flats):
        leaves.append(values[0] if all(v is values[0] for v in values) else PerReplica(values))
    return _nest.pack_sequence_as(first, leaves)


# ---- the replica context ----

class ReplicaContext:
    """tf.distribute.ReplicaContext: where strategy.run's function runs."""

    def __init__(self, strategy, replica_id_in_sync_group):
        self._strategy = strategy
        self._replica_id = replica_id_in_sync_group

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_replicas_in_sync(self):
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self):
        return self._replica_id

    @property
    def devices(self):
        return (self._strategy.extended.worker_devices[self._replica_id % len(self._strategy.extended.worker_devices)],)

    def all_reduce(self, reduce_op, value, options=None):
        """`value` (a tensor or nested structure of tensors) summed or averaged over every replica of every worker.
        Every replica must call it, with the same structure."""
        op = ReduceOp(reduce_op.upper()) if isinstance(reduce_op, str) else reduce_op
        flat = _nest.flatten(value)
        reduced = self._strategy._cpp.all_reduce_sum(flat)
        if op is ReduceOp.MEAN:
            reduced = [_ops.divide(t, _ops.cast(self.num_replicas_in_sync, t.dtype)) for t in reduced]
        return _nest.pack_sequence_as(value, reduced)

    def merge_call(self, merge_fn, args=(), kwargs=None):
        """merge_fn(strategy, *args, **kwargs) once per worker, with each argument regrouped into PerReplica values
        of the local replicas' arguments; every replica gets its result. Every replica must call it."""
        strategy = self._strategy
        n = strategy._cpp.num_local_replicas
        local = self._replica_id % n
        if local == 0:
            strategy._merge_args = [None] * n
        strategy._cpp.merge_call(lambda: None)  # every replica has a slot list before any writes to it
        slots = strategy._merge_args
        slots[local] = (tuple(args), dict(kwargs or {}))

        def merge():
            merged_args = _regroup([a for a, _ in slots])
            merged_kwargs = _regroup([k for _, k in slots])
            strategy._merge_result = merge_fn(strategy, *merged_args, **merged_kwargs)

        strategy._cpp.merge_call(merge)
        return strategy._merge_result


# ---- strategies ----

_live = _weakref.WeakValueDictionary()  # C++ strategy address -> its Python strategy


class StrategyExtended:
    """strategy.extended: the parts of TF's StrategyExtended that programs read."""

    def __init__(self, strategy):
        self._strategy = strategy

    @property
    def worker_devices(self):
        """TF's device names: /job:localhost/... in one process, /job:<task type>/.../task:<id> in a cluster."""
        cpp = self._strategy._cpp
        resolver = self._strategy.cluster_resolver
        if resolver is not None and resolver.task_type is not None:
            return (f"/job:{resolver.task_type}/replica:0/task:{resolver.task_id}/device:CPU:0",)
        return tuple(f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(cpp.num_local_replicas))

    parameter_devices = worker_devices

    @property
    def should_checkpoint(self):
        return self._strategy._cpp.is_chief

    should_save_summary = should_checkpoint

    @property
    def should_init(self):
        return True

    experimental_should_init = should_init

    @property
    def experimental_between_graph(self):
        return self._strategy._cpp.num_workers > 1

    @property
    def experimental_require_static_shapes(self):
        return False

    def _in_multi_worker_mode(self):
        return self._strategy._cpp.num_workers > 1


class Strategy:
    """tf.distribute.Strategy over a C++ strategy (`_cpp`)."""

    def __init__(self, cpp):
        self._cpp = cpp
        self._extended = StrategyExtended(self)
        _live[cpp._id] = self

    @property
    def num_replicas_in_sync(self):
        return self._cpp.num_replicas_in_sync

    @property
    def extended(self):
        return self._extended

    @property
    def cluster_resolver(self):
        return None

    @_contextlib.contextmanager
    def _scope(self):
        guard = self._cpp.enter_scope()
        try:
            yield self
        finally:
            guard.exit()

    def scope(self):
        """While active, variables (and the Keras models and optimizers that own them) made on this thread are
        mirrored by this strategy, and tf.distribute.get_strategy() returns it."""
        return self._scope()

    def run(self, fn, args=(), kwargs=None, options=None):
        """Calls fn(*args, **kwargs) on every local replica (each on its own thread when there are several), with
        each PerReplica argument replaced by that replica's value; returns PerReplica results (plain values with
        one local replica). A Python exception in one replica stops the others and is raised here."""
        kwargs = kwargs or {}
        n = self._cpp.num_local_replicas
        results = [None] * n
        errors = []

        def replica(r):
            try:
                results[r] = fn(*_select(tuple(args), r), **_select(kwargs, r))
            except BaseException as e:
                errors.append(e)
                raise

        try:
            self._cpp.run(replica)
        except BaseException:
            if errors:
                raise errors[0] from None
            raise
        return _regroup(results)

    def _local_values(self, value):
        """The local replicas' values of `value`; None for a plain value with several local replicas."""
        if isinstance(value, DistributedValues):
            return list(value.values)
        n = self._cpp.num_local_replicas
        if n == 1:
            return [value]
        return None

    def reduce(self, reduce_op, value, axis=None):
        """The replicas' values (PerReplica, or one value per worker) summed or averaged across every replica of
        every worker, and over `axis` first when given; the same result on every worker."""
        op = _reduce_op(reduce_op)

        def one(v):
            values = self._local_values(v)
            if values is None:  # the same value on every local replica
                if op is ReduceOp.MEAN:
                    return _ops.reduce_mean(v, axis) if axis is not None else _ops.convert_to_tensor(v)
                raise ValueError(f"A non-DistributedValues value {v} cannot be reduced with the given reduce op {op}.")
            return self._cpp.reduce(getattr(_cpp._ReduceOp, op.name), values, axis)

        return _nest.map_structure(one, value)

    def gather(self, value, axis):
        """Every replica's value on every worker, concatenated along `axis` in replica order."""
        return _nest.map_structure(lambda v: self._cpp.gather(self._local_values(v) or [v], int(axis)),
                                   value)

    def experimental_local_results(self, value):
        """One value per local replica: a PerReplica's values, or a structure of them per replica."""
        if isinstance(value, DistributedValues):
            return value.values
        if not _nest.is_nested(value):
            return (value,)
        return tuple(_select(value, r) for r in range(self._cpp.num_local_replicas))

    def experimental_distribute_dataset(self, dataset, options=None):
        """Splits each global batch of `dataset` (whose last step is batch(global_batch_size), optionally followed by
        prefetch) across the replicas, after sharding it across workers by its auto_shard_policy."""
        return DistributedDataset(self, self._cpp.experimental_distribute_dataset(_cpp_dataset(dataset)), dataset)

    def distribute_datasets_from_function(self, dataset_fn, options=None):
        """Calls dataset_fn(InputContext) once per worker; its dataset (batched per replica) feeds the local
        replicas round-robin."""
        made = []

        def call(ctx):
            ds = dataset_fn(ctx)
            made.append(ds)
            return _cpp_dataset(ds)

        return DistributedDataset(self, self._cpp.distribute_datasets_from_function(call), made[0] if made else None)

    def experimental_distribute_values_from_function(self, value_fn):
        n = self._cpp.num_local_replicas
        first = self._cpp.worker_rank * n
        values = [value_fn(ValueContext(first + r, self.num_replicas_in_sync)) for r in range(n)]
        return _regroup(values)


def _cpp_dataset(dataset):
    return getattr(dataset, "_cpp", dataset)


class MirroredStrategy(Strategy):
    """Replicas on logical CPU devices of this process ("/cpu:0", "/cpu:1", ...), one thread each. Without devices,
    as TF: the GPUs, else every logical CPU that tf.config.set_logical_device_configuration made (one replica when
    it made none). cross_device_ops is accepted: lockstep's all-reduce sums the same way whatever TF algorithm it
    names."""

    def __init__(self, devices=None, cross_device_ops=None):
        devices = [devices] if isinstance(devices, str) else list(devices or [])
        if not devices:
            from .. import config

            if not config.list_logical_devices("GPU") and len(config.list_logical_devices("CPU")) > 1:
                devices = [d.name for d in config.list_logical_devices("CPU")]
        if cross_device_ops is not None and not isinstance(cross_device_ops, CrossDeviceOps):
            raise ValueError(f"cross_device_ops must be a tf.distribute.CrossDeviceOps (NcclAllReduce, "
                             f"HierarchicalCopyAllReduce, ReductionToOneDevice), got {cross_device_ops!r}")
        super().__init__(_cpp._mirrored([str(d) for d in devices], CommunicationOptions()._to_cpp()))


class CrossDeviceOps:
    """How TensorFlow's MirroredStrategy sums across devices; lockstep's replicas share one process and its
    all-reduce gives the same sum whichever is named, so these only record the choice."""

    def __init__(self, num_packs=1):
        self._num_packs = int(num_packs)


class NcclAllReduce(CrossDeviceOps):
    pass


class HierarchicalCopyAllReduce(CrossDeviceOps):
    pass


class ReductionToOneDevice(CrossDeviceOps):
    def __init__(self, reduce_to_device=None, accumulation_fn=None):
        super().__init__()
        self._reduce_to_device = reduce_to_device


class CentralStorageStrategy(MirroredStrategy):
    """tf.distribute.experimental.CentralStorageStrategy: variables on one device, computation mirrored on
    `compute_devices` (default as TF: the GPUs, else the first CPU). Host memory is the only storage here, so it
    is MirroredStrategy over those devices."""

    def __init__(self, compute_devices=None, parameter_device=None):
        from .. import config

        if compute_devices is None:
            compute_devices = [d.name for d in config.list_logical_devices("GPU")] or ["/cpu:0"]
        super().__init__(compute_devices)


class OneDeviceStrategy(Strategy):
    """One replica on `device`."""

    def __init__(self, device):
        super().__init__(_cpp._mirrored([str(device)], CommunicationOptions()._to_cpp()))


class MultiWorkerMirroredStrategy(Strategy):
    """One replica per worker process; the cluster comes from `cluster_resolver`, else TF_CONFIG (or MPI, SLURM),
    else this process alone. The constructor waits until every worker has joined."""

    def __init__(self, cluster_resolver=None, communication_options=None):
        options = communication_options or CommunicationOptions()
        if not isinstance(options, CommunicationOptions):
            raise ValueError("communication_options must be a tf.distribute.experimental.CommunicationOptions, got "
                             f"{communication_options!r}")
        if cluster_resolver is None:
            spec, task_type, task_id, tf_config = None, None, 0, None
        else:
            spec, task_type, task_id, tf_config = cluster_resolver._cluster()
        cpp = _cpp._multi_worker(options._to_cpp(), tf_config, spec, task_type, task_id)
        super().__init__(cpp)
        self._resolver = _resolvers._StrategyClusterResolver(cpp, configured=bool(cpp.cluster_spec))
        if cpp.num_workers > 1:
            _watch_exit(self)

    @property
    def cluster_resolver(self):
        return self._resolver


class _ExperimentalMultiWorkerMirroredStrategy(MultiWorkerMirroredStrategy):
    """tf.distribute.experimental.MultiWorkerMirroredStrategy: the collective implementation as `communication`."""

    def __init__(self, communication=CommunicationImplementation.AUTO, cluster_resolver=None,
                 communication_options=None):
        options = CommunicationOptions(implementation=communication)
        if communication_options is not None:
            options = options.merge(communication_options)
        super().__init__(cluster_resolver, options)


class _DefaultDistributionStrategy(Strategy):
    """What get_strategy() returns outside every scope: one replica, no communication."""


# Made at import, before any scope is entered: the C++ side's default strategy.
_default = _DefaultDistributionStrategy(_cpp._default())


def get_strategy():
    """The strategy whose scope is active on this thread (or whose replica this thread runs), else the default."""
    return _live.get(_cpp._current_id()) or _default


def has_strategy():
    return _cpp.has_strategy()


def in_cross_replica_context():
    return _cpp.has_strategy() and not _cpp.in_replica_context()


def get_replica_context():
    """The replica context inside strategy.run; None in a strategy's scope outside run (cross-replica context);
    the default strategy's single replica elsewhere."""
    if _cpp.in_replica_context():
        return ReplicaContext(get_strategy(), get_strategy()._cpp.worker_rank * get_strategy()._cpp.num_local_replicas
                              + _cpp.replica_id_in_sync_group())
    if _cpp.has_strategy():
        return None
    return ReplicaContext(_default, 0)


_global_scope = []


def experimental_set_strategy(strategy):
    """Makes `strategy` current on this thread until the next call (None: the default strategy)."""
    while _global_scope:
        _global_scope.pop().__exit__(None, None, None)
    if strategy is not None:
        scope = strategy.scope()
        scope.__enter__()
        _global_scope.append(scope)


# ---- distributed input ----

class DistributedDataset:
    """A dataset split across replicas; iterating gives per-replica elements (plain with one local replica).
    `_cpp` is the C++ DistributedDataset that Keras' fit consumes."""

    def __init__(self, strategy, cpp, source=None):
        self._strategy = strategy
        self._cpp = cpp
        self._source = source
        self._iterations = 0

    def __iter__(self):
        it = DistributedIterator(self, self._cpp._iterator(self._iterations))
        self._iterations += 1
        return it

    @property
    def element_spec(self):
        spec = getattr(self._source, "element_spec", None)
        if spec is None:
            raise NotImplementedError("tf.distribute.DistributedDataset.element_spec is not implemented by lockstep "
                                      "for this dataset (see docs/python.md)")
        return spec

    def reduce(self, initial_state, reduce_func):
        state = initial_state
        for element in self:
            state = reduce_func(state, element)
        return state


class DistributedIterator:
    """Per-replica elements from a DistributedDataset; every worker stops at the same step."""

    def __init__(self, dataset, cpp):
        self._dataset = dataset
        self._cpp = cpp

    def __iter__(self):
        return self

    def __next__(self):
        per_replica = self._cpp.next()
        if per_replica is None:
            raise StopIteration
        source = self._dataset._source
        if hasattr(source, "_element_of"):  # TF's namedtuples, where the dataset has them
            per_replica = [source._element_of(e) for e in per_replica]
        return _regroup(per_replica)

    def get_next(self):
        try:
            return next(self)
        except StopIteration:
            from ..errors import OutOfRangeError

            raise OutOfRangeError(None, None, "End of sequence") from None

    def get_next_as_optional(self):
        """The next per-replica element as a tf.experimental.Optional, empty at the end on every worker alike."""
        from ..data._optional import next_as_optional

        return next_as_optional(self)

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def _lockstep_trackable(self):
        """Its place in the global stream, for tf.train.Checkpoint(iterator=iter(dist_dataset)): restored exactly,
        also on another number of workers."""
        return _lockstep.train.position_trackable(self._cpp._save_state, self._cpp._restore_state, True)


# ---- ending the job ----

_watched = _weakref.WeakSet()


def _watch_exit(strategy):
    """A multi-worker strategy leaves the job when the program ends: in order (the shutdown barrier) when it
    returns, or at once, naming this worker and the exception, when an uncaught exception ends it, so that the
    other workers stop instead of waiting for this one."""
    if not _watched:
        _atexit.register(_shutdown_all)
        previous = _sys.excepthook

        def excepthook(kind, value, traceback):
            previous(kind, value, traceback)  # lockstep/_failure.py's: the launcher learns the failure
            message = f"{kind.__name__}: {value}".splitlines()[0] if str(value) else kind.__name__
            for s in list(_watched):
                s._cpp.abort(message)
                s._cpp.shutdown()

        _sys.excepthook = excepthook
    _watched.add(strategy)


def _shutdown_all():
    for s in list(_watched):
        s._cpp.shutdown()
