"""tf.keras.datasets.fashion_mnist."""
from ... import _lockstep, _unimplemented


def load_data():
    """((x_train, y_train), (x_test, y_test)): uint8 images [N, 28, 28] and uint8 labels [N]."""
    return _lockstep.keras.datasets.fashion_mnist()


_unimplemented.install(globals(), "tf.keras.datasets.fashion_mnist")
