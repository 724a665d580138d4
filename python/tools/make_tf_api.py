"""Records TensorFlow 2.21's public names, module by module, into python/lockstep/_tf_api.json.

lockstep raises NotImplementedError for a name TensorFlow has and lockstep does not (docs/python.md), and a plain
AttributeError for a name TensorFlow does not have either; this file is how it tells them apart without importing
TensorFlow. Run with the venv's Python: build/venv/bin/python3 python/tools/make_tf_api.py
"""
import json
import os
import types

import tensorflow as tf

# The modules a TensorFlow program reaches, as lockstep mirrors them (tf.keras is Keras 3 in TF 2.21).
MODULES = ["", "math", "nn", "random", "dtypes", "errors", "data", "data.experimental", "distribute",
           "distribute.experimental", "distribute.cluster_resolver", "train", "summary", "io", "io.gfile", "config",
           "keras", "keras.layers", "keras.losses", "keras.metrics", "keras.optimizers", "keras.optimizers.schedules",
           "keras.callbacks", "keras.models", "keras.activations", "keras.initializers", "keras.regularizers",
           "keras.datasets", "keras.datasets.mnist", "keras.datasets.fashion_mnist", "keras.utils", "keras.backend",
           "keras.mixed_precision", "image", "linalg", "saved_model", "experimental", "debugging", "autograph",
           "sparse", "strings", "signal", "lookup", "compat", "types", "bitwise", "feature_column", "sysconfig",
           "test", "tpu", "audio", "queue", "quantization", "profiler", "xla", "mlir", "graph_util", "raw_ops",
           "version", "lite", "estimator"]
# The submodules of tf.train, tf.summary and tf.config that programs reach.
MODULES += ["train.experimental", "summary.experimental", "config.experimental", "config.threading", "config.optimizer"]


def public(obj):
    return sorted(n for n in dir(obj) if not n.startswith("_"))


api = {}
for path in MODULES:
    obj = tf
    try:
        for part in filter(None, path.split(".")):
            obj = getattr(obj, part)
    except AttributeError:
        continue
    if isinstance(obj, types.ModuleType) or path == "":
        api["tf" + ("." + path if path else "")] = public(obj)

out = os.path.join(os.path.dirname(__file__), "..", "lockstep", "_tf_api.json")
with open(out, "w") as f:
    json.dump({"tensorflow": tf.__version__, "modules": api}, f, indent=0, sort_keys=True)
    f.write("\n")
print(f"{out}: {sum(len(v) for v in api.values())} names in {len(api)} modules")
