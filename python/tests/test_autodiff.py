"""tf.GradientTape's structures, jacobians and modes, and tf.function's signatures, traces and concrete functions
(issue 36), against TensorFlow 2.21."""
import numpy as np
import pytest

from conftest import tensorflow_or_skip


def grads_of(lib, make_target, make_sources, output_gradients=None, unconnected="none"):
    """Gradients of make_target(x, v) (any nest) for make_sources(x, v), as NumPy in the sources' structure."""
    x = lib.constant([1.0, 2.0])
    v = lib.Variable([[0.5], [-1.0]])
    with lib.GradientTape() as tape:
        tape.watch(x)
        target = make_target(lib, x, v)
    og = None if output_gradients is None else output_gradients(lib)
    grads = tape.gradient(target, make_sources(x, v), output_gradients=og, unconnected_gradients=unconnected)
    return lib.nest.map_structure(lambda g: None if g is None else g.numpy(), grads)


TARGETS = {
    "tensor": lambda lib, x, v: lib.reduce_sum(x * x),
    "dict": lambda lib, x, v: {"a": x * x, "b": [lib.matmul(x[None], v)], "c": lib.reduce_sum(v)},
    "list": lambda lib, x, v: [x * 3.0, lib.exp(x)],
    "tuple_nested": lambda lib, x, v: (x, {"k": (v * v, x * v[0])}),
    "matrix": lambda lib, x, v: lib.matmul(v, x[None]),
}
SOURCES = {
    "list": lambda x, v: [x, v],
    "dict": lambda x, v: {"x": x, "v": v},
    "nested": lambda x, v: (x, [{"v": v}]),
    "single": lambda x, v: x,
}


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("sources", sorted(SOURCES))
def test_gradient_of_target_and_source_structures_agrees_with_tensorflow(tf, target, sources):
    real = tensorflow_or_skip()
    mine = grads_of(tf, TARGETS[target], SOURCES[sources])
    theirs = grads_of(real, TARGETS[target], SOURCES[sources])
    flat_m, flat_t = tf.nest.flatten(mine), real.nest.flatten(theirs)
    assert len(flat_m) == len(flat_t)
    for m, t in zip(flat_m, flat_t):
        assert (m is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(m, t, rtol=1e-6)
    assert type(mine) is type(theirs)


def test_output_gradients_and_unconnected_zero_agree_with_tensorflow(tf):
    real = tensorflow_or_skip()
    cases = [
        (lambda lib, x, v: [x * x, lib.reduce_sum(v)], lambda lib: [lib.constant([2.0, 3.0]), lib.constant(4.0)]),
        (lambda lib, x, v: {"a": x * x, "b": x}, lambda lib: {"a": lib.constant([1.0, -1.0]), "b": lib.ones([2])}),
        (lambda lib, x, v: x * 5.0, lambda lib: lib.constant([0.5, 2.0])),
    ]
    for target, og in cases:
        mine = grads_of(tf, target, lambda x, v: [x, v], og)
        theirs = grads_of(real, target, lambda x, v: [x, v], og)
        for m, t in zip(mine, theirs):
            assert (m is None) == (t is None)
            if t is not None:
                np.testing.assert_allclose(m, t)
    # A None seed counts as ones (TF 2.21 crashes on it, so it is checked on lockstep alone).
    seeded = grads_of(tf, lambda lib, x, v: {"a": x * x, "b": x}, lambda x, v: x,
                      lambda lib: {"a": lib.constant([1.0, -1.0]), "b": None})
    np.testing.assert_allclose(seeded, [3.0, -3.0])
    unconnected = lambda lib, x, v: x * 2.0  # noqa: E731
    mine = grads_of(tf, unconnected, lambda x, v: [x, v], unconnected="zero")
    theirs = grads_of(real, unconnected, lambda x, v: [x, v], unconnected=real.UnconnectedGradients.ZERO)
    np.testing.assert_allclose(mine[1], theirs[1])
    assert grads_of(tf, unconnected, lambda x, v: [x, v])[1] is None


def test_dict_of_targets_computed_after_the_block_is_not_none(tf):
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        targets = {"a": y, "b": [y * 2.0]}
    assert float(tape.gradient(targets, x)) == 12.0


def test_integer_targets_and_sources_give_none_as_tensorflow(tf):
    x = tf.constant(2.0)
    i = tf.constant(3)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, i])
        y = x * x
    assert tape.gradient(tf.constant(3), x) is None
    assert tape.gradient(y, i) is None
    assert float(tape.gradient([y, tf.constant(1)], x)) == 4.0
    assert float(tape.gradient(x, x)) == 1.0


def test_jacobian_and_batch_jacobian_agree_with_tensorflow(tf):
    real = tensorflow_or_skip()

    def run(lib, persistent):
        x = lib.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        w = lib.Variable([[1.0, -1.0], [0.5, 2.0], [0.0, 1.0]])
        with lib.GradientTape(persistent=persistent) as tape:
            tape.watch(x)
            y = lib.tanh(lib.matmul(x, w))
        out = [tape.jacobian(y, w).numpy()]
        if persistent:
            out.append(tape.jacobian(y, [x, w])[0].numpy())
            out.append(tape.batch_jacobian(y, x).numpy())
            out.append(tape.jacobian(y, lib.constant(1.0), unconnected_gradients="zero").numpy())
        return out

    for persistent in (False, True):
        for m, t in zip(run(tf, persistent), run(real, persistent)):
            assert m.shape == t.shape
            np.testing.assert_allclose(m, t, rtol=1e-5, atol=1e-6)


def test_hessian_by_nested_tapes_agrees_with_tensorflow(tf):
    real = tensorflow_or_skip()

    def run(lib):
        x = lib.Variable([1.0, 2.0])
        with lib.GradientTape() as outer:
            with lib.GradientTape() as inner:
                # an outer product, not x[0] * x[1]: the backward of lockstep's slice and gather is not itself
                # differentiable yet (docs/python.md)
                y = lib.reduce_sum(x * x * x) + lib.reduce_sum(lib.reshape(x, [2, 1]) * lib.reshape(x, [1, 2]))
            g = inner.gradient(y, x)
        return outer.jacobian(g, x).numpy()

    np.testing.assert_allclose(run(tf), run(real))


def test_tape_modes_reset_stop_recording_and_watched_variables(tf):
    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            skipped = v * 2.0
        kept = v * 3.0
    assert tape.gradient(skipped, v) is None
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(kept, v)
    with tf.GradientTape() as tape:
        first = v * 2.0
        tape.reset()
        second = v * 3.0
    assert float(tape.gradient([first, second], v)) == 3.0
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = v * v
    assert tape.watched_variables() == (v,) and float(tape.gradient(y, v)) == 2.0
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = v * 2.0
    assert tape.gradient(y, v) is None and tape.watched_variables() == ()


def test_tape_bad_input(tf):
    x = tf.constant(1.0)
    tape = tf.GradientTape()
    with pytest.raises(ValueError, match="not tf.Tensor"):
        tape.watch(3.0)
    with pytest.raises(ValueError, match="not recording"):
        with tape.stop_recording():
            pass
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="foo")
    with pytest.raises(TypeError, match="target"):
        tape.gradient(None, x)
    with pytest.raises(RuntimeError, match="persistent=True"):
        tape.jacobian(y, x, experimental_use_pfor=False)
    with tf.GradientTape(persistent=True) as tape:
        a = tf.ones([2, 2])
        tape.watch(a)
        b = tf.ones([3, 2]) * 2.0
    with pytest.raises(ValueError, match="first dimension"):
        tape.batch_jacobian(b, a)
    with pytest.raises(TypeError, match="None"):
        tape.gradient(b, [a, None])


def test_function_input_signature_checks_as_tensorflow(tf):
    real = tensorflow_or_skip()
    for lib in (tf, real):
        f = lib.function(lambda a: a * 2, input_signature=[lib.TensorSpec([None], lib.float32)])
        np.testing.assert_allclose(f([1.0, 2.0]).numpy(), [2.0, 4.0])
        np.testing.assert_allclose(f(a=lib.constant([1.0])).numpy(), [2.0])
        for bad in ((lib.constant([1, 2]),), (lib.constant([[1.0]]),), (3.0,), (lib.constant([1.0]), 1.0)):
            with pytest.raises(TypeError):
                f(*bad)
        with pytest.raises(TypeError, match="tuple or a list"):
            lib.function(lambda a: a, input_signature=lib.TensorSpec([None]))
        with pytest.raises(TypeError):
            lib.function(lambda a: a, foo=1)
        nested = lib.function(lambda d: d["a"], input_signature=[{"a": lib.TensorSpec([None])}])
        assert nested({"a": [1.0]}).shape == (1,)
        with pytest.raises(TypeError):
            nested({"b": [1.0]})


def test_tracing_counts_agree_with_tensorflow(tf):
    real = tensorflow_or_skip()

    def counts(lib):
        @lib.function
        def g(a, b=1):
            return a + b

        g.get_concrete_function(lib.TensorSpec([None, 2], lib.int32), 3)
        g(1), g(2), g(lib.constant(1)), g(lib.constant(2)), g(lib.constant([1, 2])), g(lib.ones([5, 2], lib.int32), 3)

        @lib.function(reduce_retracing=True)
        def h(a):
            return a

        for shape in ([1], [2], [3], [2, 2]):
            h(lib.ones(shape))
        return g.experimental_get_tracing_count(), h.experimental_get_tracing_count()

    assert counts(tf) == counts(real)


def test_concrete_function_signature_outputs_and_calls(tf):
    real = tensorflow_or_skip()
    f = tf.function(lambda a: {"y": a * 2.0, "z": tf.reduce_sum(a, 1)})
    c = f.get_concrete_function(tf.TensorSpec([None, 3], tf.float32))
    rf = real.function(lambda a: {"y": a * 2.0, "z": real.reduce_sum(a, 1)})
    rc = rf.get_concrete_function(real.TensorSpec([None, 3], real.float32))
    (spec,), kwargs = c.structured_input_signature
    (rspec,), _ = rc.structured_input_signature
    assert (spec.shape.as_list(), spec.dtype.name, spec.name, kwargs) == (rspec.shape.as_list(), rspec.dtype.name,
                                                                          rspec.name, {})
    for key in ("y", "z"):
        assert c.structured_outputs[key].shape.as_list() == rc.structured_outputs[key].shape.as_list()
    assert [s.shape.as_list() for s in c.inputs] == [t.shape.as_list() for t in rc.inputs]
    assert len(c.outputs) == len(rc.outputs) == 2
    np.testing.assert_allclose(c(tf.ones([1, 3]))["z"].numpy(), [3.0])
    with pytest.raises(tf.errors.InvalidArgumentError):
        c(tf.ones([1, 3], tf.int32))

    @tf.function
    def g(a, b=1):
        return a + b

    c1 = g.get_concrete_function(tf.TensorSpec([None, 2]), 3)
    assert c1.structured_input_signature[0][1] == 3
    np.testing.assert_allclose(c1(tf.ones([1, 2])).numpy(), [[4.0, 4.0]])
    np.testing.assert_allclose(c1(tf.ones([1, 2]), 3).numpy(), [[4.0, 4.0]])
    with pytest.raises(TypeError, match="Python value 3"):
        c1(tf.ones([1, 2]), 4)


def test_function_methods_bind_to_instances(tf):
    class M(tf.Module):
        def __init__(self, k):
            super().__init__()
            self.k = tf.Variable(k)

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def __call__(self, x):
            return x + self.k

        @tf.function
        def double(self, x):
            return x * 2

    a, b = M(1.0), M(10.0)
    assert float(a(tf.constant(1.0))) == 2.0 and float(b(tf.constant(1.0))) == 11.0
    assert a.__call__ is a.__call__ and a.__call__.__self__ is a and a.__call__.__func__ is M.__dict__["__call__"]
    assert a.__call__.get_concrete_function().structured_input_signature[0][0].name == "x"
    a.double(1), a.double(2)
    assert a.double.experimental_get_tracing_count() == 2 and b.double.experimental_get_tracing_count() == 0
    assert M.double.python_function.__name__ == "double" and a.double.python_function.__self__ is a
    with pytest.raises(TypeError):
        a(tf.constant([1.0, 2.0]))


def test_function_gradients_flow_through(tf):
    v = tf.Variable(3.0)

    @tf.function(jit_compile=True, reduce_retracing=True)
    def loss(x):
        return v * v * x

    with tf.GradientTape() as tape:
        y = loss(tf.constant(2.0))
    assert float(tape.gradient(y, v)) == 12.0


def _second_order_through_slice_and_gather(lib):
    x = lib.Variable([1.0, 2.0, 3.0])
    with lib.GradientTape() as outer:
        with lib.GradientTape() as inner:
            y = lib.reduce_sum(x[1:] ** 3) + lib.reduce_sum(lib.gather(x, [0, 0]) ** 2)
        g = inner.gradient(y, x)
    return g.numpy(), outer.gradient(g, x).numpy()


def test_gradients_of_gradients_flow_through_slices_and_gathers(tf):
    g, h = _second_order_through_slice_and_gather(tf)
    np.testing.assert_allclose(g, [4.0, 12.0, 27.0])
    np.testing.assert_allclose(h, [4.0, 12.0, 18.0])
    real = tensorflow_or_skip()
    for ours, theirs in zip((g, h), _second_order_through_slice_and_gather(real)):
        np.testing.assert_allclose(ours, theirs)


def test_a_concrete_function_of_unknown_rank_after_a_call(tf):
    """The saved-model guide's order: a call traces a scalar, then a concrete function of any shape is asked for."""
    double = tf.function(lambda x: x * 2)
    double(tf.constant(0.0))
    concrete = double.get_concrete_function(tf.TensorSpec(None, tf.float32))
    assert float(concrete(tf.constant(3.0))) == 6.0
    assert tf.TensorShape([None, 2]).is_compatible_with([3, 2]) and not tf.TensorShape([2]).is_compatible_with([3])
    with pytest.raises(ValueError, match="unknown rank"):
        len(tf.TensorShape(None))
