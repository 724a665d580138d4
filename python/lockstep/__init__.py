"""lockstep: TensorFlow's distributed-training API over lockstep's C++ engine.

A TensorFlow 2 program runs on lockstep after changing its import to `import lockstep as tf`. What lockstep does
not implement raises NotImplementedError naming the symbol; docs/python.md lists what it does.
"""


def _check_cpu():
    """The module is compiled for the build's baseline CPU (x86-64-v3 by default): on a CPU below it, one clear
    ImportError instead of SIGILL. The check is a small library compiled for plain x86-64 (lockstep/core/cpu.h)."""
    import ctypes
    import os

    check = ctypes.CDLL(os.path.join(os.path.dirname(__file__), "liblockstep_cpu_check.so"))
    check.lockstep_cpu_baseline_error.restype = ctypes.c_char_p
    error = check.lockstep_cpu_baseline_error()
    if error:
        raise ImportError(f"lockstep: {error.decode()}")


_check_cpu()

# OpenMP (libgomp, loaded with the module) spins 300000 turns at a barrier before it sleeps. When another process
# holds a core, a team then waits on a thread that is not running: the custom-loop seed program took 2.5x as long
# beside one busy process, against 2% slower on an idle machine with 10000 turns (docs/performance.md). A value the
# user set stays.
__import__("os").environ.setdefault("GOMP_SPINCOUNT", "10000")

from . import _lockstep  # noqa: E402

__version__ = _lockstep.__version__

from . import errors, dtypes, _failure, _unimplemented  # noqa: E402
from ._tensor import Tensor, TensorShape  # noqa: E402
from ._variable import Variable  # noqa: E402
from ._autodiff import GradientTape, UnconnectedGradients, function  # noqa: E402
from . import math, nn, random  # noqa: E402
from ._core import *  # noqa: E402,F401,F403
from ._array_ops import *  # noqa: E402,F401,F403
from ._control_flow import *  # noqa: E402,F401,F403
from ._runtime import *  # noqa: E402,F401,F403
from ._sparse import *  # noqa: E402,F401,F403
from ._ragged import *  # noqa: E402,F401,F403
from ._module import Module  # noqa: E402
from .dtypes import (DType, as_dtype, bfloat16, bool, double, float32, float64, int32, int64,  # noqa: E402,A004
                     string, uint8)
from . import _nest as nest  # noqa: E402

from . import _core, _array_ops, _symbolic  # noqa: E402

# tf.* functions called on a functional model's symbolic tensors become layers of it (Keras 2's op layers).
_symbolic.install(globals(), "tf", [n for n in _core.__all__ + _array_ops.__all__ if n not in (
    "executing_eagerly", "device", "name_scope", "init_scope", "control_dependencies", "no_op", "is_tensor", "print",
    "get_static_value")])
for _module, _prefix in ((math, "tf.math"), (nn, "tf.nn")):
    _symbolic.install(vars(_module), _prefix, [n for n in dir(_module) if not n.startswith("_")])
del _module, _prefix

_unimplemented.install(globals(), "tf")


def _optional(name):
    """Imports lockstep.<name>, the modules built in their own files; a module not yet present reads as missing."""
    import importlib

    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        return _unimplemented.Missing(f"tf.{name}")


for _name in ("data", "distribute", "keras", "train", "summary", "io", "config", "signal", "sparse", "strings",
              "linalg", "image", "saved_model", "audio", "lookup", "feature_column", "profiler", "autograph", "ragged",
              "experimental", "debugging", "version", "types", "graph_util"):
    globals()[_name] = _optional(_name)
from .data._structure import TensorSpec  # noqa: E402 (the type that tf.data's element_spec is made of)

# TensorFlow 2's aliases of Keras: tf.initializers (and the *_initializer classes), and, as TF 2 before Keras 3
# had them, tf.losses, tf.metrics and tf.optimizers.
initializers, losses, metrics, optimizers = keras.initializers, keras.losses, keras.metrics, keras.optimizers
ones_initializer, zeros_initializer = keras.initializers.Ones, keras.initializers.Zeros
random_normal_initializer, random_uniform_initializer = keras.initializers.RandomNormal, keras.initializers.RandomUniform

# Out of lockstep's scope (docs/coverage-out-of-scope.txt says why): every name in them says it is not implemented.
for _name in ("lite", "tpu", "estimator", "queue", "raw_ops", "xla", "mlir", "compat"):
    globals()[_name] = _unimplemented.Missing(f"tf.{_name}")
del _name
