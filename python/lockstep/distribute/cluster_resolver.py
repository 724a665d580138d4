"""tf.distribute.cluster_resolver and tf.train.ClusterSpec: who the tasks of a job are. ClusterSpec is the C++ class
and TF_CONFIG is read and checked by the C++ side (lockstep/distribute/cluster/cluster_resolver.h), so a malformed
one fails with the same one-line message as the CLI's."""
import json as _json
import os as _os

from .. import _lockstep, _unimplemented

_cpp = _lockstep.distribute


# tf.train.ClusterSpec: job name -> task addresses, given as a list (the index is the position) or as a dict
# {task index: address}; the C++ class (python/src/cluster_spec.cc) with TF's Python API.
ClusterSpec = _cpp.ClusterSpec


class ClusterResolver:
    """tf.distribute.cluster_resolver.ClusterResolver: a cluster spec and this task's place in it."""

    task_type = None
    task_id = None
    rpc_layer = None
    environment = ""

    def cluster_spec(self):
        raise NotImplementedError(_unimplemented.message(f"{type(self).__name__}.cluster_spec"))

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        task_type = self.task_type if task_type is None else task_type
        task_id = self.task_id if task_id is None else task_id
        spec = self.cluster_spec()
        if task_type is None or task_id is None or task_type not in spec.jobs:
            return ""
        address = spec.task_address(task_type, task_id)
        layer = self.rpc_layer if rpc_layer is None else rpc_layer
        return f"{layer}://{address}" if layer else address

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return {}  # this build trains on CPUs

    def _cluster(self):
        """(cluster as lists of addresses, task type, task id, TF_CONFIG text or None) for the C++ strategy."""
        return self.cluster_spec()._jobs(), self.task_type, self.task_id or 0, None


class TFConfigClusterResolver(ClusterResolver):
    """Reads the cluster and this task from the TF_CONFIG environment variable, each time it is asked (as TF's)."""

    def __init__(self, task_type=None, task_id=None, rpc_layer=None, environment=None):
        self._task_type = task_type
        self._task_id = task_id
        self._rpc_layer = rpc_layer
        self._environment = environment

    @staticmethod
    def _tf_config():
        return _os.environ.get("TF_CONFIG", "")

    def _parsed(self):
        return _cpp._parse_tf_config(self._tf_config())

    def cluster_spec(self):
        return ClusterSpec(self._parsed()[0])

    @property
    def task_type(self):
        return self._task_type if self._task_type is not None else self._parsed()[1]

    @task_type.setter
    def task_type(self, value):
        self._task_type = value

    @property
    def task_id(self):
        if self._task_id is not None:
            return self._task_id
        _, task_type, task_id, _, _ = self._parsed()
        return None if task_type is None else task_id

    @task_id.setter
    def task_id(self, value):
        self._task_id = value

    @property
    def rpc_layer(self):
        if self._rpc_layer is not None:
            return self._rpc_layer
        self._parsed()  # a malformed TF_CONFIG fails with the C++ side's message, not JSON's
        text = self._tf_config()
        return _json.loads(text).get("rpc_layer") if text.strip() else None

    @rpc_layer.setter
    def rpc_layer(self, value):
        self._rpc_layer = value

    @property
    def environment(self):
        return self._environment if self._environment is not None else self._parsed()[4]

    def _cluster(self):
        if self._task_type is None and self._task_id is None:
            return None, None, 0, self._tf_config()  # the C++ resolver, which also reads the job's security files
        return super()._cluster()


class SimpleClusterResolver(ClusterResolver):
    """A cluster and a task given in code."""

    def __init__(self, cluster_spec, master="", task_type=None, task_id=None, environment="", num_accelerators=None,
                 rpc_layer=None):
        self._spec = ClusterSpec(cluster_spec)
        self._master = master
        self.task_type = task_type
        self.task_id = task_id
        self.environment = environment
        self.rpc_layer = rpc_layer
        self._num_accelerators = num_accelerators or {}

    def cluster_spec(self):
        return self._spec

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        if task_type is not None and task_id is not None:
            return super().master(task_type, task_id, rpc_layer)
        layer = rpc_layer or self.rpc_layer
        return f"{layer}://{self._master}" if layer else self._master

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        return dict(self._num_accelerators)


class SlurmClusterResolver(ClusterResolver):
    """The tasks of an srun job step, all "worker"s ranked by SLURM_PROCID (worker 0 is the chief); the k-th task on
    a node listens on port_base + k. Read from the environment by the C++ side, as the CLI reads it."""

    def __init__(self, jobs=None, port_base=8888, gpus_per_node=None, gpus_per_task=None, tasks_per_node=None,
                 auto_set_gpu=True, rpc_layer="grpc"):
        spec, task_id = _cpp._parse_slurm(int(port_base))
        if jobs is not None and jobs != {"worker": len(spec["worker"])}:
            raise ValueError(f"SlurmClusterResolver jobs={jobs!r}: lockstep makes every task of the step a worker "
                             f"({len(spec['worker'])} here); leave jobs unset")
        self._spec = ClusterSpec(spec)
        self.task_type = "worker"
        self.task_id = task_id
        self.rpc_layer = rpc_layer

    def cluster_spec(self):
        return self._spec


class _StrategyClusterResolver(ClusterResolver):
    """strategy.cluster_resolver: the cluster the C++ strategy resolved (TF_CONFIG, MPI, SLURM or one worker)."""

    def __init__(self, cpp, configured):
        self.task_type = cpp.task_type if configured else None
        self.task_id = cpp.task_id if configured else None
        self.rpc_layer = cpp.rpc_layer if configured else None
        self._spec = ClusterSpec(cpp.cluster_spec)

    def cluster_spec(self):
        return self._spec


_unimplemented.install(globals(), "tf.distribute.cluster_resolver")
