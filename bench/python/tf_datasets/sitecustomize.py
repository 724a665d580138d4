"""Put on PYTHONPATH for TensorFlow's runs of the seed programs (bench/python/run.py, python/tests/test_examples.py):
MNIST is neither packaged by Debian nor downloadable here, so Keras 2's mnist.load_data returns Fashion-MNIST, read
from $HOME/.keras/datasets/fashion-mnist as Keras reads it (lockstep's runs get the same files through
LOCKSTEP_DATASETS). Keras 2's public module bound load_data when it was imported, so that binding is replaced too."""
try:
    import tf_keras.src.datasets.fashion_mnist as _fashion
    import tf_keras.src.datasets.mnist as _mnist
    import tf_keras.api._v2.keras.datasets.mnist as _public

    _mnist.load_data = _public.load_data = _fashion.load_data
except ImportError:
    pass
