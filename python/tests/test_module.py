"""tf.Module and tf.name_scope as TensorFlow's guides use them: variables and submodules found from attributes
(nested in lists and dicts, each once, in TensorFlow's order), name scopes, checkpoints of a Module, and Keras layers
as Modules."""
import numpy as np
import pytest

from conftest import tensorflow_or_skip


def make_classes(tf):
    class Dense(tf.Module):
        def __init__(self, in_features, out_features, name=None):
            super().__init__(name=name)
            self.w = tf.Variable(tf.ones([in_features, out_features]) * 0.5, name="w")
            self.b = tf.Variable(tf.zeros([out_features]), name="b")

        def __call__(self, x):
            return tf.nn.relu(tf.matmul(x, self.w) + self.b)

    class Sequential(tf.Module):
        def __init__(self, name=None):
            super().__init__(name=name)
            self.dense_1 = Dense(3, 3)
            self.layers = [Dense(3, 2, name="second"), {"frozen": tf.Variable(1.0, trainable=False, name="f")}]
            self.again = self.dense_1  # the same module twice counts once

        @tf.Module.with_name_scope
        def __call__(self, x):
            return self.layers[0](self.dense_1(x))

        @tf.Module.with_name_scope
        def scope_name(self):
            with tf.name_scope("inner") as scope:
                return scope

    return Dense, Sequential


def summary(tf, model):
    return {"name": model.name, "scope": model.name_scope.name, "variables": [v.name for v in model.variables],
            "trainable": [v.name for v in model.trainable_variables],
            "non_trainable": [v.name for v in model.non_trainable_variables],
            "submodules": [m.name for m in model.submodules], "call": np.asarray(model(tf.ones([1, 3]))).tolist(),
            "scope_in_method": model.scope_name()}


def test_module_tracks_what_tensorflow_tracks(tf):
    expected = {"name": "sequential", "scope": "sequential/", "variables": ["f:0", "b:0", "w:0", "b:0", "w:0"],
                "trainable": ["b:0", "w:0", "b:0", "w:0"], "non_trainable": ["f:0"],
                "submodules": ["dense", "second"], "call": [[2.25, 2.25]], "scope_in_method": "sequential/inner/"}
    assert summary(tf, make_classes(tf)[1]()) == expected
    real = tensorflow_or_skip()
    assert summary(real, make_classes(real)[1]()) == expected


def test_name_scopes_nest_and_module_names_are_checked(tf):
    with tf.name_scope("outer") as outer:
        with tf.name_scope("inner") as inner:
            module = tf.Module()
    assert (outer, inner) == ("outer/", "outer/inner/")
    assert module.name == "module" and module.name_scope.name == "outer/inner/module/"
    with tf.name_scope("absolute/") as scope:
        assert scope == "absolute/"
    with pytest.raises(ValueError, match="is not a valid module name"):
        tf.Module(name="not valid")


def test_a_module_is_checkpointed_and_restored_under_its_attribute_paths(tf, tmp_path):
    _, Sequential = make_classes(tf)
    model = Sequential()
    saved = [v.numpy().copy() for v in model.variables]
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "ckpt"))
    for v in model.variables:
        v.assign(tf.zeros_like(v) + 7.0)
    tf.train.Checkpoint(model=model).read(path)
    assert all(np.array_equal(v.numpy(), s) for v, s in zip(model.variables, saved))
    other = Sequential()
    other.layers[0].w.assign(tf.zeros([3, 2]))
    tf.train.Checkpoint(model=other).read(path)
    assert np.array_equal(other.layers[0].w.numpy(), model.layers[0].w.numpy())


def test_keras_layers_and_models_are_modules(tf):
    dense = tf.keras.layers.Dense(4)
    dense.build((None, 3))
    assert isinstance(dense, tf.Module)
    holder = tf.Module()
    holder.head = dense
    holder.model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    names = sorted(v.name for v in holder.variables)
    assert len(holder.variables) == 4 and len(names) == 4
    assert holder.submodules[0] is dense


def _deferred_restore(tf, tmp_path):
    """Saves a module of two variables (and a submodule of one); restores into a module of one, then adds the rest:
    returns the values the added variables hold and whether the restore then counts as consumed."""

    class Holder(tf.Module):
        def __init__(self):
            super().__init__()
            self.vs = []

    saved = Holder()
    saved.vs.append(tf.Variable(1.0))
    saved.vs.append(tf.Variable(2.0))
    saved.sub = [Holder()]
    saved.sub[0].vs.append(tf.Variable(5.0))
    path = tf.train.Checkpoint(m=saved).save(str(tmp_path / "ckpt"))
    target = Holder()
    target.vs.append(tf.Variable(0.0))
    status = tf.train.Checkpoint(m=target).restore(path)
    target.vs.append(tf.Variable(0.0))
    inner = Holder()
    target.sub = [inner]
    inner.vs.append(tf.Variable(0.0))
    status.assert_consumed()
    return [float(v.numpy()) for v in target.vs] + [float(inner.vs[0].numpy())]


def test_a_variable_added_after_a_restore_takes_its_saved_value(tf, tmp_path):
    assert _deferred_restore(tf, tmp_path) == [1.0, 2.0, 5.0]


def test_deferred_restoration_is_tensorflows(tmp_path):
    assert _deferred_restore(tensorflow_or_skip(), tmp_path) == [1.0, 2.0, 5.0]


def test_what_is_added_to_a_module_after_the_first_save_is_saved_too(tf, tmp_path):
    module = tf.Module()
    module.vs = [tf.Variable(1.0)]
    checkpoint = tf.train.Checkpoint(m=module)
    checkpoint.save(str(tmp_path / "ckpt"))
    module.vs.append(tf.Variable(2.0))
    module.table = {"w": tf.Variable([3.0])}
    names = [name for name, _ in tf.train.list_variables(checkpoint.save(str(tmp_path / "ckpt")))]
    assert names == ["m/table/w", "m/vs/0", "m/vs/1", "save_counter"]
