"""The tf.keras classes generated from the C++ registries: one Python class for each registry entry and no registry
class in Python without one, each with Keras' signature as TensorFlow 2.21's Keras declares it
(tests/golden/keras_signatures.json, recorded by tests/golden/make_keras_signatures.py)."""
import inspect
import json

import pytest

from conftest import REPO

GOLDEN = json.loads((REPO / "tests" / "golden" / "keras_signatures.json").read_text())

# Registry kind -> (the tf.keras module path, the name of its base class there).
KINDS = {
    "layer": ("keras.layers", "Layer"),
    "loss": ("keras.losses", "Loss"),
    "metric": ("keras.metrics", "Metric"),
    "optimizer": ("keras.optimizers", "Optimizer"),
    "learning-rate schedule": ("keras.optimizers.schedules", "LearningRateSchedule"),
    "initializer": ("keras.initializers", "Initializer"),
    "regularizer": ("keras.regularizers", "Regularizer"),
    "callback": ("keras.callbacks", "Callback"),
}
# Python classes over a registry class of another name: Keras' ReLU() and Softmax() are lockstep's
# Activation("relu") and Activation("softmax") until issue 37 declares them in C++.
SPELLINGS = {"layer": {"ReLU", "Softmax"}}


def module(tf, path):
    for part in path.split("."):
        tf = getattr(tf, part)
    return tf


def registry_classes(tf, kind):
    """The module's classes that stand for a C++ registry class: those with a _class_name, each once."""
    mod = module(tf, KINDS[kind][0])
    found = {}
    for name, value in vars(mod).items():
        if inspect.isclass(value) and getattr(value, "_class_name", None) and value.__name__ == name:
            found[name] = value
    return found


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_registry_class_has_a_python_class_and_the_reverse(tf, kind):
    from lockstep.keras import _registry

    registry = set(_registry.names(kind))
    python = set(registry_classes(tf, kind)) - SPELLINGS.get(kind, set())
    assert python == registry, (f"{kind}: Python classes without a registry entry: {sorted(python - registry)}; "
                                f"registry entries without a Python class: {sorted(registry - python)}")


def keras_text(params):
    return ", ".join(p["name"] + ("" if p.get("required") else "=" + json.dumps(p["default"])) for p in params)


def python_text(parameters):
    def default(v):
        return json.dumps(list(v) if isinstance(v, tuple) else v)

    return ", ".join(p.name + ("" if p.default is p.empty else "=" + default(p.default)) for p in parameters)


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_class_has_keras_signature(tf, kind):
    for name, klass in registry_classes(tf, kind).items():
        if name in SPELLINGS.get(kind, set()):
            continue
        params = list(inspect.signature(klass).parameters.values())
        own = [p for p in params if p.kind is not p.KEYWORD_ONLY]
        assert python_text(own) == keras_text(GOLDEN[kind][name]), f"{kind} {name}"
        if kind == "layer":  # every layer's keyword arguments, those its own list lacks
            base = [p for p in GOLDEN["layer"]["Layer"] if p["name"] not in {q.name for q in own}]
            assert python_text([p for p in params if p.kind is p.KEYWORD_ONLY]) == keras_text(base), name


@pytest.mark.parametrize("method", ["fit", "evaluate", "predict"])
def test_model_methods_have_keras_signature(tf, method):
    params = list(inspect.signature(getattr(tf.keras.Model, method)).parameters.values())[1:]  # self
    assert python_text(params) == keras_text(GOLDEN["model method"][method])


def test_arguments_lockstep_lacks_are_refused_by_the_registry_naming_them(tf):
    with pytest.raises(ValueError, match=r"clipnorm=1.0 is not supported by lockstep"):
        tf.keras.optimizers.SGD(clipnorm=1.0)
    with pytest.raises(ValueError, match=r"groups=2 is not supported by lockstep"):
        tf.keras.layers.Conv2D(4, 3, groups=2)
    with pytest.raises(ValueError, match=r"ignore_class=3 is not supported by lockstep"):
        tf.keras.losses.SparseCategoricalCrossentropy(ignore_class=3)
    with pytest.raises(TypeError, match="units"):
        tf.keras.layers.Dense()
    assert float(tf.keras.optimizers.SGD().learning_rate) == pytest.approx(0.01)
