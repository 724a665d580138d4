"""tf.GradientTape and tf.function."""
import contextlib
import functools

from . import _lockstep, _nest

_ops = _lockstep.ops


class GradientTape:
    """Records the ops run inside `with tf.GradientTape() as tape:` to differentiate them, as TensorFlow's does."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._tape = _lockstep._GradientTape(persistent, watch_accessed_variables)
        self._persistent = persistent

    def __enter__(self):
        self._tape._enter()
        return self

    def __exit__(self, *exc):
        self._tape._exit()
        return False

    def watch(self, tensor):
        for t in _nest.flatten(tensor):
            self._tape._watch(t)

    @contextlib.contextmanager
    def stop_recording(self):
        self._tape._exit()
        try:
            yield
        finally:
            self._tape._enter()

    def reset(self):
        self._tape.reset()

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        targets = _nest.flatten(target)
        total = targets[0] if len(targets) == 1 else _ops.add_n([_ops.reduce_sum(t) for t in targets])
        flat = _nest.flatten(sources)
        if output_gradients is not None:
            output_gradients = _ops.convert_to_tensor(_nest.flatten(output_gradients)[0])
        grads = self._tape._gradient(_ops.convert_to_tensor(total), flat, output_gradients)
        zeros = str(getattr(unconnected_gradients, "value", unconnected_gradients)).lower() == "zero"
        if zeros:
            grads = [g if g is not None else _ops.fill(s.shape, 0, s.dtype) for g, s in zip(grads, flat)]
        return _nest.pack_sequence_as(sources, grads)

    def jacobian(self, *args, **kwargs):
        raise NotImplementedError("tf.GradientTape.jacobian is not implemented by lockstep (see docs/python.md)")

    batch_jacobian = jacobian


class UnconnectedGradients:
    NONE = "none"
    ZERO = "zero"


def function(func=None, input_signature=None, autograph=True, jit_compile=None, reduce_retracing=False,
             experimental_compile=None, **kwargs):
    """tf.function: lockstep runs the decorated Python eagerly, every op a call into its C++ kernels, so the result
    is what TensorFlow's traced graph computes; there is no tracing step to wait for and no retracing."""

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kw):
            return f(*args, **kw)

        wrapper.python_function = f
        wrapper.function_spec = input_signature
        wrapper.get_concrete_function = lambda *a, **k: wrapper
        wrapper.experimental_get_tracing_count = lambda: 0
        return wrapper

    return decorate if func is None else decorate(func)
