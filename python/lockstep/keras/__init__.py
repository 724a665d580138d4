"""tf.keras over lockstep's C++ Keras: layers, Sequential and functional models, compile/fit/evaluate/predict,
losses, metrics, optimizers, callbacks (Python subclasses too), saving and the built-in data sets."""
from .. import _unimplemented
from . import (activations, backend, callbacks, datasets, initializers, layers, losses, metrics,  # noqa: F401
               mixed_precision, models, optimizers, regularizers, utils)
from .initializers import Initializer  # noqa: F401
from .layers import Input, InputLayer, KerasTensor, Layer  # noqa: F401
from .losses import Loss  # noqa: F401
from .metrics import Metric  # noqa: F401
from .mixed_precision import DTypePolicy  # noqa: F401
from .models import Model, Sequential  # noqa: F401
from .optimizers import Optimizer  # noqa: F401
from .regularizers import Regularizer  # noqa: F401

__version__ = "3.15.1"  # the Keras whose API and file formats lockstep follows

_unimplemented.install(globals(), "tf.keras")
