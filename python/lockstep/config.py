"""tf.config for lockstep: the devices lockstep runs on (the CPU, and the GPUs of a CUDA build: docs/gpu.md), its
thread count (core/threads.h), and the settings TF programs make that mean nothing on lockstep's
always-eager CPU engine, accepted and recorded so that they read back as TensorFlow's do:
run_functions_eagerly (lockstep's functions always run eagerly), optimizer.set_jit and
optimizer.set_experimental_options (there is no graph to compile or rewrite), set_soft_device_placement (every op
runs on the CPU), set_visible_devices (the CPU always runs the ops) and threading.set_inter_op_parallelism_threads
(lockstep runs a thread's ops one after another; each op uses the intra-op threads).
"""
import collections as _collections
import types as _types

from . import _lockstep, _unimplemented

_cc = _lockstep.config

PhysicalDevice = _collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = _collections.namedtuple("LogicalDevice", ["name", "device_type"])


class LogicalDeviceConfiguration(_collections.namedtuple(
        "LogicalDeviceConfiguration", ["memory_limit", "experimental_priority", "experimental_device_ordinal"])):
    """tf.config.LogicalDeviceConfiguration: one logical device made of a physical one (lockstep: of the CPU)."""

    def __new__(cls, memory_limit=None, experimental_priority=None, experimental_device_ordinal=None):
        return super().__new__(cls, memory_limit, experimental_priority, experimental_device_ordinal)


_CPU = PhysicalDevice("/physical_device:CPU:0", "CPU")
_settings = {"logical_cpus": None, "visible": [_CPU], "soft_placement": True, "run_eagerly": False, "jit": "",
             "optimizer_options": {"disable_model_pruning": False, "disable_meta_optimizer": False},
             "intra_op_threads": 0, "inter_op_threads": 0}


def _gpus():
    return [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(_cc.gpu_count())]


def list_physical_devices(device_type=None):
    return [d for d in [_CPU] + _gpus() if device_type is None or d.device_type == device_type]


def list_logical_devices(device_type=None):
    """The CPU, or as many logical CPUs as set_logical_device_configuration asked for ("/device:CPU:<i>"), and each
    GPU ("/device:GPU:<i>")."""
    cpus = [] if _CPU not in _settings["visible"] else [
        LogicalDevice(f"/device:CPU:{i}", "CPU") for i in range(len(_settings["logical_cpus"] or [None]))]
    gpus = [LogicalDevice(d.name.replace("physical_device", "device"), "GPU") for d in _gpus()]
    return [d for d in cpus + gpus if device_type is None or d.device_type == device_type]


def _check_device(device):
    if device not in list_physical_devices():
        raise ValueError(f"Unrecognized device: {device!r}")


def get_visible_devices(device_type=None):
    return [d for d in _settings["visible"] if device_type is None or d.device_type == device_type]


def set_visible_devices(devices, device_type=None):
    """Records which of the physical devices the program sees; lockstep's ops run on the CPU either way."""
    devices = [devices] if isinstance(devices, PhysicalDevice) else list(devices)
    for device in devices:
        _check_device(device)
        if device_type is not None and device.device_type != device_type:
            raise ValueError(f"device {device.name} is not of type {device_type}")
    kept = [d for d in _settings["visible"] if device_type is not None and d.device_type != device_type]
    _settings["visible"] = kept + [d for d in devices if d not in kept]


def get_logical_device_configuration(device):
    _check_device(device)
    return None if _settings["logical_cpus"] is None else list(_settings["logical_cpus"])


def set_logical_device_configuration(device, logical_devices):
    """Splits the CPU into len(logical_devices) logical CPUs, as TF programs do to run MirroredStrategy replicas on
    one CPU; lockstep's replicas share its thread pool, so memory_limit and the rest are not used."""
    _check_device(device)
    _settings["logical_cpus"] = None if logical_devices is None else list(logical_devices)


def get_soft_device_placement():
    return _settings["soft_placement"]


def set_soft_device_placement(enabled):
    _settings["soft_placement"] = bool(enabled)


def run_functions_eagerly(run_eagerly):
    """Recorded; tf.function on lockstep runs the Python eagerly in any case."""
    _settings["run_eagerly"] = bool(run_eagerly)


def functions_run_eagerly():
    return _settings["run_eagerly"]


experimental_run_functions_eagerly = run_functions_eagerly
experimental_functions_run_eagerly = functions_run_eagerly


def _set_intra_op_parallelism_threads(num_threads):
    """The threads one op may use; 0 lets lockstep choose ($OMP_NUM_THREADS, else the usable cores)."""
    _cc.set_num_threads(int(num_threads))
    _settings["intra_op_threads"] = int(num_threads)


def _get_intra_op_parallelism_threads():
    return _settings["intra_op_threads"]


def _set_inter_op_parallelism_threads(num_threads):
    """Recorded: lockstep has no pool of ops running side by side."""
    _settings["inter_op_threads"] = int(num_threads)


def _get_inter_op_parallelism_threads():
    return _settings["inter_op_threads"]


def _set_jit(enabled):
    """Recorded: lockstep runs its kernels without XLA."""
    _settings["jit"] = enabled if isinstance(enabled, str) else ("autoclustering" if enabled else "")


def _get_jit():
    return _settings["jit"]


def _set_experimental_options(options):
    """Recorded: Grappler's graph rewrites have no graph to rewrite on lockstep."""
    _settings["optimizer_options"] = {**_settings["optimizer_options"], **options}


def _get_experimental_options():
    return dict(_settings["optimizer_options"])


def _set_memory_growth(device, enable):
    _check_device(device)
    raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")


def _get_memory_growth(device):
    _check_device(device)
    raise ValueError("Cannot get memory growth on non-GPU and non-Pluggable devices")


def _get_device_details(device):
    _check_device(device)
    return {}


def _submodule(name, **functions):
    module = _types.ModuleType(f"{__name__}.{name}", f"tf.config.{name}")
    module.__dict__.update(functions)
    _unimplemented.install(module.__dict__, f"tf.config.{name}")
    return module


threading = _submodule("threading", set_intra_op_parallelism_threads=_set_intra_op_parallelism_threads,
                       get_intra_op_parallelism_threads=_get_intra_op_parallelism_threads,
                       set_inter_op_parallelism_threads=_set_inter_op_parallelism_threads,
                       get_inter_op_parallelism_threads=_get_inter_op_parallelism_threads)
optimizer = _submodule("optimizer", set_jit=_set_jit, get_jit=_get_jit,
                       set_experimental_options=_set_experimental_options,
                       get_experimental_options=_get_experimental_options)
experimental = _submodule("experimental", list_physical_devices=list_physical_devices,
                          list_logical_devices=list_logical_devices, get_visible_devices=get_visible_devices,
                          set_visible_devices=set_visible_devices, set_memory_growth=_set_memory_growth,
                          get_memory_growth=_get_memory_growth, get_device_details=_get_device_details,
                          VirtualDeviceConfiguration=LogicalDeviceConfiguration,
                          get_virtual_device_configuration=get_logical_device_configuration,
                          set_virtual_device_configuration=set_logical_device_configuration)
_unimplemented.install(globals(), "tf.config")
