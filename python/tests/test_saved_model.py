"""tf.saved_model: save/load round trips of modules, Keras models and signatures, in this process and a fresh one,
and the errors for what cannot be loaded."""
import json
import os
import subprocess
import textwrap

import numpy as np
import pytest
from conftest import REPO, tensorflow_or_skip

PYTHON = REPO / "build" / "venv" / "bin" / "python3"


def _classes(tf):
    """The guide's CustomModule (a variable, a traced __call__, a mutate with an input signature) and kin, made for
    either framework."""

    class CustomModule(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(1.)

        @tf.function
        def __call__(self, x):
            return x * self.v

        @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
        def mutate(self, new_v):
            self.v.assign(new_v)

    return CustomModule


# Classes at module level: lockstep finds a saved object's class by its name.
def _lockstep():
    import lockstep

    return lockstep


_ls = _lockstep()
CustomModule = _classes(_ls)
CustomModule.__qualname__ = "CustomModule"


class Inner(_ls.Module):
    def __init__(self):
        super().__init__()
        self.w = _ls.Variable([1., 2.])

    @_ls.function
    def __call__(self, x):
        return x * self.w


class Outer(_ls.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.biases = {"a": _ls.Variable(1.), "b": _ls.Variable(-1.)}
        self.layers_ = [_ls.Variable([0.5, 0.5]), _ls.Variable(3)]
        self.shared = self.inner.w
        self.scale = 2.0

    @_ls.function
    def __call__(self, x):
        return self.inner(x) * self.layers_[0] * self.scale + self.biases["a"]


class TwoSignatures(_ls.Module):
    def __init__(self):
        super().__init__()
        self.v = _ls.Variable(2.)

    @_ls.function(input_signature=[_ls.TensorSpec(None, _ls.float32)])
    def __call__(self, x):
        return {"custom_output_name": x * self.v}

    @_ls.function(input_signature=[_ls.TensorSpec([None], _ls.float32, name="values")])
    def pair(self, x):
        return x, x + self.v


def double(x):
    return x * 2.


class WithFunctions(_ls.Module):
    def __init__(self):
        super().__init__()
        self.preprocess = double
        self.lam = lambda x: x

    @_ls.function
    def __call__(self, x):
        return self.preprocess(x)


def test_module_round_trip(tf, tmp_path):
    module = CustomModule()
    module.mutate(tf.constant(4.))
    tf.saved_model.save(module, str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path / "m")) == ["assets", "lockstep_saved_model.json", "variables"]
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert float(loaded.v.numpy()) == 4.
    assert float(loaded(tf.constant(3.)).numpy()) == 12.
    loaded.mutate(tf.constant(2.))  # the loaded object's own state, not the saved module's
    assert float(loaded(tf.constant(3.)).numpy()) == 6.
    assert float(module(tf.constant(3.)).numpy()) == 12.


def test_module_round_trip_agrees_with_tensorflow(tf, tmp_path):
    real = tensorflow_or_skip()
    results = []
    for framework, path in ((tf, tmp_path / "ls"), (real, tmp_path / "tf")):
        module = (CustomModule if framework is tf else _classes(framework))()
        module(framework.constant(0.))
        module.mutate(framework.constant(3.))
        framework.saved_model.save(module, str(path))
        loaded = framework.saved_model.load(str(path))
        before = loaded(framework.constant(2.)).numpy()
        loaded.mutate(framework.constant(5.))
        results.append((before, loaded(framework.constant(2.)).numpy(), sorted(loaded.signatures.keys())))
    np.testing.assert_allclose(results[0][:2], results[1][:2])
    assert results[0][2] == results[1][2]


def test_loaded_variables_fine_tune(tf, tmp_path):
    module = CustomModule()
    tf.saved_model.save(module, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    with tf.GradientTape() as tape:
        loss = (10. - loaded(tf.constant(2.))) ** 2
    grad = tape.gradient(loss, loaded.v)
    np.testing.assert_allclose(grad.numpy(), -2 * (10. - 2.) * 2.)


def test_nested_modules_lists_dicts_and_sharing(tf, tmp_path):
    outer = Outer()
    outer.inner.w.assign([3., 4.])
    outer.biases["a"].assign(0.25)
    x = tf.constant([1., 1.])
    expected = outer(x).numpy()
    tf.saved_model.save(outer, tmp_path / "o")
    loaded = tf.saved_model.load(tmp_path / "o")
    np.testing.assert_allclose(loaded(x).numpy(), expected)
    np.testing.assert_allclose(loaded.inner(x).numpy(), [3., 4.])
    assert isinstance(loaded.inner, Inner)
    assert sorted(loaded.biases) == ["a", "b"] and float(loaded.biases["b"].numpy()) == -1.
    assert int(loaded.layers_[1].numpy()) == 3 and loaded.layers_[1].dtype == tf.int32
    assert loaded.shared is loaded.inner.w  # one variable, found at two places, stays one
    assert loaded.scale == 2.0
    assert len(loaded.trainable_variables) == len(outer.trainable_variables) == 5


def test_keras_sequential_predictions_and_serving_signature(tf, tmp_path):
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(4, activation="relu"),
                                 tf.keras.layers.Dense(2)])
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    tf.saved_model.save(model, str(tmp_path / "k"))
    loaded = tf.saved_model.load(str(tmp_path / "k"))
    np.testing.assert_allclose(np.asarray(loaded(x)), np.asarray(model(x)), rtol=1e-6)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    serve = loaded.signatures[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
    _, inputs = serve.structured_input_signature
    assert list(inputs) == ["inputs"] and tuple(inputs["inputs"].shape) == (None, 3)
    assert tuple(serve.structured_outputs["output_0"].shape) == (None, 2)
    np.testing.assert_allclose(serve(inputs=tf.constant(x))["output_0"].numpy(), np.asarray(model(x)), rtol=1e-6)


def test_keras_serving_signature_agrees_with_tensorflow(tf, tmp_path):
    real = tensorflow_or_skip()
    found = []
    for framework in (tf, real):
        a, b = framework.keras.Input((3,)), framework.keras.Input((2,))
        out = framework.keras.layers.Dense(1)(framework.keras.layers.Concatenate()([a, b]))
        path = str(tmp_path / framework.__name__)
        framework.saved_model.save(framework.keras.Model([a, b], out), path)
        serve = framework.saved_model.load(path).signatures["serving_default"]
        _, inputs = serve.structured_input_signature
        found.append((sorted(inputs), {k: tuple(v.shape) for k, v in inputs.items()},
                      {k: tuple(v.shape) for k, v in serve.structured_outputs.items()}))
    assert found[0] == found[1]


def test_keras_model_inside_a_module(tf, tmp_path):
    class_module = WithModel()
    x = np.ones((2, 3), np.float32)
    expected = class_module(x).numpy()
    tf.saved_model.save(class_module, tmp_path / "w")
    loaded = tf.saved_model.load(tmp_path / "w")
    np.testing.assert_allclose(loaded(x).numpy(), expected, rtol=1e-6)


class WithModel(_ls.Module):
    def __init__(self):
        super().__init__()
        self.model = _ls.keras.Sequential([_ls.keras.Input((3,)), _ls.keras.layers.Dense(2)])
        self.offset = _ls.Variable(1.)

    @_ls.function
    def __call__(self, x):
        return self.model(x) + self.offset


def test_signatures(tf, tmp_path):
    module = TwoSignatures()
    signatures = {"serving_default": module.__call__.get_concrete_function(tf.TensorSpec(None, tf.float32)),
                  "pair": module.pair}
    tf.saved_model.save(module, tmp_path / "s", signatures=signatures)
    loaded = tf.saved_model.load(tmp_path / "s")
    assert sorted(loaded.signatures) == ["pair", "serving_default"]
    out = loaded.signatures["serving_default"](x=tf.constant(3.))
    assert list(out) == ["custom_output_name"] and float(out["custom_output_name"].numpy()) == 6.
    pair = loaded.signatures["pair"]
    assert list(pair.structured_input_signature[1]) == ["values"]
    out = pair(values=tf.constant([1., 2.]))
    assert sorted(out) == ["output_0", "output_1"]
    np.testing.assert_allclose(out["output_1"].numpy(), [3., 4.])
    np.testing.assert_allclose(pair([1., 2.])["output_0"].numpy(), [1., 2.])  # positional, a list converted
    loaded.v.assign(10.)  # signatures run on the loaded object's state
    assert float(loaded.signatures["serving_default"](x=tf.constant(1.))["custom_output_name"].numpy()) == 10.


def test_one_function_signature_is_serving_default(tf, tmp_path):
    module = TwoSignatures()
    tf.saved_model.save(module, tmp_path / "s", signatures=module.pair)
    loaded = tf.saved_model.load(tmp_path / "s")
    assert list(loaded.signatures.keys()) == ["serving_default"]
    outputs = loaded.signatures["serving_default"].structured_outputs  # known at save, as from TF's trace
    assert sorted(outputs) == ["output_0", "output_1"] and tuple(outputs["output_1"].shape) == (None,)


def test_signature_must_return_tensors(tf, tmp_path):
    module = CustomModule()
    module.mutate(tf.constant(5.))
    with pytest.raises(ValueError, match="non-Tensor value None for key 'output_0'"):
        tf.saved_model.save(module, tmp_path / "s", signatures=module.mutate)
    assert float(module.v.numpy()) == 5.  # the save's trace left the variable as it was


def test_default_signature_rule_agrees_with_tensorflow(tf, tmp_path):
    real = tensorflow_or_skip()
    keys = []
    for framework in (tf, real):
        class One(framework.Module):
            def __init__(self):
                super().__init__()
                self.v = framework.Variable(2.)

            @framework.function(input_signature=[framework.TensorSpec([], framework.float32)])
            def __call__(self, x):
                return x * self.v

        One.__qualname__ = f"One_{framework.__name__}"
        globals()[One.__qualname__] = One
        path = str(tmp_path / framework.__name__)
        framework.saved_model.save(One(), path)
        loaded = framework.saved_model.load(path)
        keys.append((list(loaded.signatures.keys()),
                     {k: v.numpy() for k, v in loaded.signatures["serving_default"](x=framework.constant(3.)).items()}))
    assert keys[0] == keys[1]
    tf.saved_model.save(TwoSignatures(), tmp_path / "two")  # two candidates: TF picks none
    assert list(tf.saved_model.load(tmp_path / "two").signatures) == []


def test_signature_bad_inputs(tf, tmp_path):
    module = TwoSignatures()
    tf.saved_model.save(module, tmp_path / "s", signatures={"pair": module.pair})
    pair = tf.saved_model.load(tmp_path / "s").signatures["pair"]
    with pytest.raises(TypeError, match="missing a required argument"):
        pair()
    with pytest.raises(TypeError, match="unexpected"):
        pair(y=tf.constant([1.]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="float32"):
        pair(values=tf.constant([1, 2]))


def test_functions_held_by_name(tf, tmp_path):
    module = WithFunctions()
    tf.saved_model.save(module, tmp_path / "f")
    loaded = tf.saved_model.load(tmp_path / "f")
    assert loaded.preprocess is double
    assert float(loaded(tf.constant(2.)).numpy()) == 4.
    with pytest.raises(ValueError, match="'lam'.*top level"):
        loaded.lam(1.)


def test_options_and_tags(tf, tmp_path):
    module = CustomModule()
    options = tf.saved_model.SaveOptions(experimental_io_device="/job:localhost", extra_tags=["gpu"],
                                         function_aliases={"mutate": module.mutate})
    tf.saved_model.save(module, tmp_path / "m", options=options)
    assert tf.saved_model.load(tmp_path / "m", tags=["serve"]).v.numpy() == 1.
    assert tf.saved_model.load(tmp_path / "m", tags="gpu").v.numpy() == 1.
    with pytest.raises(ValueError, match="incompatible argument to `tags`"):
        tf.saved_model.load(tmp_path / "m", tags=["train"])
    loaded = tf.saved_model.load(tmp_path / "m", options=tf.saved_model.LoadOptions(
        experimental_io_device="/job:localhost", experimental_load_function_aliases=True))
    loaded.function_aliases["mutate"](tf.constant(7.))
    assert float(loaded.v.numpy()) == 7.
    with pytest.raises(TypeError):
        tf.saved_model.SaveOptions(foo=1)
    with pytest.raises(NotImplementedError, match="save_debug_info"):
        tf.saved_model.SaveOptions(save_debug_info=True)
    with pytest.raises(NotImplementedError, match="experimental_skip_checkpoint"):
        tf.saved_model.LoadOptions(experimental_skip_checkpoint=True)
    with pytest.raises(ValueError, match="VariablePolicy"):
        tf.saved_model.SaveOptions(experimental_variable_policy="nonsense")
    with pytest.raises(TypeError, match="SaveOptions"):
        tf.saved_model.save(module, tmp_path / "m", options={"a": 1})


def test_constants_and_contains_saved_model(tf, tmp_path):
    assert tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY == "serving_default"
    assert (tf.saved_model.SERVING, tf.saved_model.TRAINING) == ("serve", "train")
    assert not tf.saved_model.contains_saved_model(tmp_path)
    tf.saved_model.save(CustomModule(), tmp_path / "m")
    assert tf.saved_model.contains_saved_model(tmp_path / "m")
    assert tf.saved_model.experimental.VariablePolicy.NONE.value is None


def test_bad_objects_and_signatures(tf, tmp_path):
    with pytest.raises(ValueError, match="Expected an object of type `Trackable`"):
        tf.saved_model.save(5, tmp_path / "x")
    with pytest.raises(ValueError, match="Expected a TensorFlow function"):
        tf.saved_model.save(CustomModule(), tmp_path / "x", signatures=5)
    with pytest.raises(ValueError, match="Expected a TensorFlow function"):
        tf.saved_model.save(CustomModule(), tmp_path / "x", signatures={"a": lambda x: x})
    with pytest.raises(NotImplementedError, match="Dense"):
        holder = tf.Module()
        holder.layer = tf.keras.layers.Dense(2)
        tf.saved_model.save(holder, tmp_path / "x")

    def local():
        class Local(tf.Module):
            pass
        return Local()

    with pytest.raises(ValueError, match="top level"):
        tf.saved_model.save(local(), tmp_path / "x")
    (tmp_path / "file").write_text("")
    with pytest.raises(tf.errors.FailedPreconditionError, match="is a file"):
        tf.saved_model.save(CustomModule(), tmp_path / "file")


def test_bad_directories(tf, tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="SavedModel file does not exist"):
        tf.saved_model.load(str(tmp_path / "missing"))
    (tmp_path / "tf_written").mkdir()
    (tmp_path / "tf_written" / "saved_model.pb").write_bytes(b"\x08\x01")
    with pytest.raises(NotImplementedError, match="written by TensorFlow"):
        tf.saved_model.load(tmp_path / "tf_written")
    tf.saved_model.save(CustomModule(), tmp_path / "m")
    meta = tmp_path / "m" / "lockstep_saved_model.json"
    good = meta.read_text()
    meta.write_text(good[:40])
    with pytest.raises(tf.errors.DataLossError, match="corrupted"):
        tf.saved_model.load(tmp_path / "m")
    meta.write_text(json.dumps({**json.loads(good), "version": 99}))
    with pytest.raises(tf.errors.DataLossError, match="version 99"):
        tf.saved_model.load(tmp_path / "m")
    meta.write_text(good)
    (tmp_path / "m" / "variables" / "variables.safetensors").write_bytes(b"junk")
    with pytest.raises(tf.errors.DataLossError):
        tf.saved_model.load(tmp_path / "m")
    os.remove(tmp_path / "m" / "variables" / "variables.safetensors")
    with pytest.raises(tf.errors.NotFoundError):
        tf.saved_model.load(tmp_path / "m")


def _run(script, cwd, extra_path=""):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO / "build" / "python"), extra_path) if p))
    return subprocess.run([str(PYTHON), "-c", textwrap.dedent(script)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_fresh_process_load(tf, tmp_path):
    (tmp_path / "my_models.py").write_text(textwrap.dedent("""
        import lockstep as tf

        class Scaler(tf.Module):
            def __init__(self):
                super().__init__()
                self.v = tf.Variable([1., 2.])
                self.parts = [tf.Variable(3.)]

            @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
            def __call__(self, x):
                return x * self.v * self.parts[0]
        """))
    save = _run(f"""
        import lockstep as tf, my_models
        m = my_models.Scaler()
        m.v.assign([5., 6.])
        tf.saved_model.save(m, {str(tmp_path / 'sm')!r})
        """, tmp_path, str(tmp_path))
    assert save.returncode == 0, save.stderr
    load = _run(f"""
        import lockstep as tf
        loaded = tf.saved_model.load({str(tmp_path / 'sm')!r})
        print(type(loaded).__name__, loaded(tf.constant([1., 1.])).numpy().tolist(),
              loaded.signatures['serving_default'](x=tf.constant([2., 2.]))['output_0'].numpy().tolist())
        """, tmp_path, str(tmp_path))
    assert load.returncode == 0, load.stderr
    assert load.stdout.split() == ["Scaler", "[15.0,", "18.0]", "[30.0,", "36.0]"]


def test_main_class_loads_in_same_run_and_says_so_elsewhere(tf, tmp_path):
    script = tmp_path / "notebook.py"
    script.write_text(textwrap.dedent(f"""
        import lockstep as tf

        class NotebookModule(tf.Module):
            def __init__(self):
                super().__init__()
                self.v = tf.Variable(2.)

            @tf.function
            def __call__(self, x):
                return x * self.v

        tf.saved_model.save(NotebookModule(), {str(tmp_path / 'nb')!r})
        print(float(tf.saved_model.load({str(tmp_path / 'nb')!r})(tf.constant(3.)).numpy()))
        """))
    env = dict(os.environ, PYTHONPATH=str(REPO / "build" / "python"))
    same = subprocess.run([str(PYTHON), str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert same.returncode == 0, same.stderr
    assert same.stdout.strip() == "6.0"
    other = _run(f"""
        import lockstep as tf
        try:
            tf.saved_model.load({str(tmp_path / 'nb')!r})
        except ValueError as e:
            print(e)
        """, tmp_path)
    assert other.returncode == 0, other.stderr
    assert "NotebookModule" in other.stdout and "__main__" in other.stdout and "before loading" in other.stdout


def test_load_model_of_a_saved_model_directory_says_what_to_use(tf, tmp_path):
    model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1)])
    tf.saved_model.save(model, str(tmp_path / "sm"))
    with pytest.raises(ValueError, match="tf.saved_model.load"):
        tf.keras.models.load_model(str(tmp_path / "sm"))
