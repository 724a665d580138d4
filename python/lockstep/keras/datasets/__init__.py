"""tf.keras.datasets: MNIST and Fashion-MNIST as Keras returns them, read from local files only (lockstep never
downloads): Keras' cache ~/.keras/datasets (mnist.npz; fashion-mnist/*-idx*-ubyte.gz), $LOCKSTEP_DATASETS and
/usr/share/datasets, in the order lockstep/data/datasets.h gives."""
from . import fashion_mnist, mnist  # noqa: F401
from ... import _unimplemented

_unimplemented.install(globals(), "tf.keras.datasets")
