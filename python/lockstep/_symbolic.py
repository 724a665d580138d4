"""tf.* functions on symbolic tensors (Keras 2's automatic op layers): `x = tf.nn.relu(inputs)` in a functional
model's construction becomes a TFOpLambda layer that calls tf.nn.relu when the model runs.

Each function of the tf, tf.math and tf.nn namespaces is wrapped once: on tensors it runs as before (a symbolic
tensor used as a value raises SymbolicTensorError before anything is computed), and on that error the call is
recorded as a layer instead."""
import functools
import types


def _dispatching(function, name):
    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except NotImplementedError as e:
            from .keras.layers import SymbolicTensorError, TFOpLambda

            if not isinstance(e, SymbolicTensorError):
                raise
            return TFOpLambda(function, args, kwargs, name=name)._apply()

    return call


def install(namespace, prefix, names):
    """Wraps the functions `names` of `namespace` (a module's globals) as tf.<prefix>.<name>."""
    for name in names:
        function = namespace.get(name)
        if callable(function) and not isinstance(function, (type, types.ModuleType)):
            namespace[name] = _dispatching(function, f"{prefix}.{name}")
