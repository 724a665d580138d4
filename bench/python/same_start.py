#!/usr/bin/env python3
"""Runs a seed program (examples/python) so that lockstep and TensorFlow start from the same point, to compare their
accuracy rather than their random draws:

  python3 same_start.py lockstep|tensorflow DIR PROGRAM.py

The k-th model the program trains (fit, or a call with training=True) takes its initial weights from DIR/model-k.npz
when that file exists, and writes them there when it does not (run TensorFlow first, then lockstep);
`Dataset.shuffle` keeps the order, so both see the same batches. Nothing else in the program changes: the same model, optimizer, loop and evaluation.
"""
import functools
import importlib
import os
import runpy
import sys

import numpy as np


def main():
    framework, weights_dir, program = sys.argv[1:4]
    tf = importlib.import_module(framework)
    tf.data.Dataset.shuffle = lambda self, *args, **kwargs: self
    started = []

    def start(model, inputs):
        if any(m is model for m in started) or (inputs is None and not model.built):
            return
        started.append(model)
        path = os.path.join(weights_dir, f"model-{len(started)}.npz")

        def sync(*_):
            if not model.built:
                first = inputs[0] if isinstance(inputs, (tuple, list)) else inputs
                model.build(tuple(first.shape))
            if os.path.exists(path):
                with np.load(path) as saved:
                    model.set_weights([saved[f"arr_{i}"] for i in range(len(saved.files))])
            else:
                np.savez(path, *model.get_weights())

        if framework == "tensorflow":
            # The first call may come inside strategy.run (a replica context) and inside a tf.function being traced:
            # the weights are set once, eagerly, in the cross-replica context.
            def eager(*_):
                with tf.init_scope():
                    sync()
            tf.distribute.get_replica_context().merge_call(eager) if tf.distribute.get_replica_context() else eager()
        else:
            sync()

    def wrap(method, inputs_of):
        @functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            inputs = inputs_of(args, kwargs)
            if inputs is not False:
                start(self, inputs)
            return method(self, *args, **kwargs)
        return wrapped

    # A model starts at its first training call: fit, or a call with training=True (a custom loop). Calls for
    # inference (a restored model's evaluation) leave the weights alone.
    for cls in {tf.keras.Model, tf.keras.Sequential}:
        cls.__call__ = wrap(cls.__call__, lambda a, k: (a[0] if a else k.get("inputs")) if k.get("training") else False)
        cls.fit = wrap(cls.fit, lambda a, k: None)  # fit's batches come later: the seeds' Keras models are built
    sys.argv = [program]
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
