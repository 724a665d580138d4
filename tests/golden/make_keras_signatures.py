"""Makes tests/golden/keras_signatures.json: the parameters (name and default, in order) of every class of Keras'
layers, losses, metrics, optimizers, learning-rate schedules, initializers, regularizers and callbacks, and of the
base classes whose keyword arguments every subclass takes (Layer), and of Model's fit, evaluate and predict. The test (tests/keras/signatures_test.cc)
compares each lockstep registry entry's parameter table with its class here, so a table that drifts from Keras
fails; classes lockstep lacks are recorded too, for the classes issue 37 adds.

Generated with TensorFlow 2.21.0 / Keras 3.15.1. Rerun from the source root:
    build/venv/bin/python3 tests/golden/make_keras_signatures.py
"""
import inspect
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402

MODULES = {
    "layer": keras.layers,
    "loss": keras.losses,
    "metric": keras.metrics,
    "optimizer": keras.optimizers,
    "learning-rate schedule": keras.optimizers.schedules,
    "initializer": keras.initializers,
    "regularizer": keras.regularizers,
    "callback": keras.callbacks,
}


def plain(value):
    """A default as JSON: tuples become lists; a value JSON cannot hold, its repr under "repr"."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return {"repr": repr(value)}


def parameters(function):
    out = []
    for p in inspect.signature(function).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        entry = {"name": p.name}
        if p.default is p.empty:
            entry["required"] = True
        else:
            entry["default"] = plain(p.default)
        if p.kind is p.KEYWORD_ONLY:
            entry["keyword_only"] = True
        out.append(entry)
    return out


def main():
    golden = {"keras": keras.__version__}
    for kind, module in MODULES.items():
        classes = {}
        for name in sorted(dir(module)):
            klass = getattr(module, name)
            # Each class once, under its own name (not an alias such as MaxPool2D).
            if inspect.isclass(klass) and klass.__name__ == name:
                classes[name] = parameters(klass.__init__)
        golden[kind] = classes
    golden["model method"] = {name: parameters(getattr(keras.Model, name)) for name in ("fit", "evaluate", "predict")}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_signatures.json")
    with open(path, "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
