"""tf.keras.datasets.mnist."""
import os

from ... import _lockstep, _unimplemented


def load_data(path="mnist.npz"):
    """((x_train, y_train), (x_test, y_test)): uint8 images [N, 28, 28] and uint8 labels [N]. An absolute `path`
    is read as the mnist.npz file itself."""
    if os.path.isabs(os.fspath(path)):
        return _lockstep.keras.datasets.load_idx_directory(os.path.dirname(os.fspath(path)))
    return _lockstep.keras.datasets.mnist()


_unimplemented.install(globals(), "tf.keras.datasets.mnist")
