"""tf.keras.Model / Sequential over lockstep's C++ models: the training loop, callbacks, metrics and saving all run in
C++ (with the GIL released), so fit from Python costs what fit from C++ costs; Python only turns Keras' arguments
into the C++ call and the results back into Keras' return values."""
import json
import os

import numpy as _np

from .. import _lockstep, _unimplemented
from . import callbacks as _callbacks, layers as _layers, losses as _losses, metrics as _metrics
from . import optimizers as _optimizers
from ._registry import method_signature as _method_signature

_k = _lockstep.keras


def _verbose(verbose):
    return 1 if verbose == "auto" else int(verbose)


def _is_dataset(x):
    return hasattr(x, "_cpp") and not isinstance(x, (_np.ndarray, _layers.Layer))


def _array(x, what="fit", name="x"):
    """Data for fit/evaluate/predict: a tensor as it is; NumPy data (and lists of numbers) as NumPy, floating
    point as float32, as Keras' data adapters convert it to floatx."""
    if isinstance(x, dict):
        raise NotImplementedError("dict inputs to fit/evaluate/predict are not implemented by lockstep")
    if isinstance(x, (list, tuple)):
        if any(hasattr(item, "shape") and getattr(item, "ndim", 0) > 0 for item in x):
            raise NotImplementedError("models with several inputs or outputs take one array each in lockstep's "
                                      "fit/evaluate/predict; call the model on a list instead (see docs/python.md)")
        x = _np.asarray(x)
    if isinstance(x, _np.ndarray) and x.dtype.kind not in "biuf":
        raise ValueError(f"{what}(): {name} is an array of dtype {x.dtype} and shape {x.shape}; models take numbers "
                         f"or booleans: convert {name} to numbers first")
    if isinstance(x, _np.ndarray) and x.dtype.kind == "f" and x.dtype != _np.float32:
        return x.astype(_np.float32)
    return x


def _scope_strategy():
    """The strategy whose scope is entered now (tf.distribute's), or None: a model keeps the one it was made in."""
    from .. import distribute

    if isinstance(distribute, _unimplemented.Missing) or not distribute.has_strategy():
        return None
    return distribute.get_strategy()


class _RunScope:
    """The model's strategy scope around fit/evaluate/predict, as Keras enters it: callbacks then see the model's
    strategy in tf.distribute.get_strategy()."""

    def __init__(self, model):
        strategy = model.__dict__.get("_strategy")
        self._scope = strategy.scope() if strategy is not None and strategy is not _scope_strategy() else None

    def __enter__(self):
        if self._scope is not None:
            self._scope.__enter__()

    def __exit__(self, *exc):
        return self._scope.__exit__(*exc) if self._scope is not None else False


class Model(_layers.Layer):
    """tf.keras.Model: the functional API (Model(inputs, outputs)); Sequential is a Model too."""

    def __init__(self, *args, **kwargs):
        if type(self) not in (Model, Sequential) and not args and "inputs" not in kwargs:
            # A subclass with its own call(): its layers are the ones its attributes hold, and it runs eagerly.
            _layers.Layer.__init__(self, **kwargs)
            self._optimizer = self._loss = None
            self.__dict__["_strategy"] = _scope_strategy()
            self._list_inputs = self._list_outputs = False
            self.inputs = self.outputs = self.history = None
            return
        inputs = kwargs.pop("inputs", args[0] if args else None)
        outputs = kwargs.pop("outputs", args[1] if len(args) > 1 else None)
        name = kwargs.pop("name", args[2] if len(args) > 2 else None)
        trainable = kwargs.pop("trainable", True)
        if kwargs:
            raise _layers._serial.UnrecognizedArgumentsError(f"Unrecognized keyword arguments passed to Model: "
                                                              f"{kwargs}")
        if isinstance(inputs, dict) or isinstance(outputs, dict):
            raise NotImplementedError("functional models with dict inputs or outputs are not implemented by lockstep")
        self._list_inputs = isinstance(inputs, (list, tuple))
        self._list_outputs = isinstance(outputs, (list, tuple))
        self.inputs = list(inputs) if self._list_inputs else [inputs]
        self.outputs = list(outputs) if self._list_outputs else [outputs]
        for t in self.inputs + self.outputs:
            if not isinstance(t, _layers.KerasTensor):
                raise TypeError(f"Model(inputs, outputs) takes tf.keras.Input tensors and layer outputs on them; got "
                                f"{t!r}")
        self._init(_k.Model([t._cpp for t in self.inputs], [t._cpp for t in self.outputs], name or ""))
        if not trainable:
            self.trainable = False

    def _init(self, cpp):
        self._cpp, self._input_shape, self._batch_size = cpp, None, None
        self._optimizer = self._loss = None
        self.history = None
        self.__dict__["_strategy"] = _scope_strategy()

    @classmethod
    def _wrap(cls, cpp):
        """A Python model over a C++ one (load_model's)."""
        kind = json.loads(cpp.to_json()).get("class_name")
        klass = Sequential if kind == "Sequential" else Model
        obj = klass.__new__(klass)
        obj._init(cpp)
        obj._list_inputs = obj._list_outputs = False
        obj.inputs = obj.outputs = None
        if klass is Sequential:
            obj._entries = [_layers._RegistryLayer._wrap(layer) for layer in cpp.layers]
        return obj

    # ---- calling ----

    def __call__(self, inputs, training=None, mask=None, **kwargs):
        if not self._graph:
            return _layers.Layer.__call__(self, inputs, training=training, **kwargs)
        if _layers._symbolic(inputs):  # a model used as a layer of a functional model
            return self._symbolic_call(inputs, training)
        if isinstance(inputs, (list, tuple)) and self._list_inputs:
            out = self._cpp.call_list(list(inputs), bool(training))
            return out if self._list_outputs else out[0]
        return self._cpp.call(self._adjust_rank(inputs), bool(training))

    def call(self, inputs, training=None, mask=None):
        if not self._graph:
            return _layers.Layer.call(self, inputs)
        return self(inputs, training=training)

    def _adjust_rank(self, x):
        """Keras' rank adjustment of a single-input model's data: a rank one short of an input whose last axis is 1
        gains that axis (fit(xs, ys) on a 1-D xs for Dense(1, input_shape=[1])), one long of it loses it."""
        if not self._graph or self._list_inputs or not self._cpp.built or isinstance(x, (list, tuple)):
            return x
        ndim = getattr(x, "ndim", None)
        if ndim is None:
            return x
        ref = self.__dict__.get("_feature_shape")
        if ref is None:
            ref = self.__dict__["_feature_shape"] = tuple(self._cpp.input_shape())
        if ndim == len(ref) and ref and ref[-1] == 1:
            return _np.expand_dims(_np.asarray(x), -1)
        if ndim == len(ref) + 2 and x.shape[-1] == 1:
            return _np.squeeze(_np.asarray(x), -1)
        return x

    # ---- structure ----

    # name, weights, losses and trainable are Layer's: they read self._cpp, a C++ model (its layers') or the
    # C++ layer of a subclass with its own call() (what it tracks).
    layers = property(lambda self: self._tracked_sublayers)

    @property
    def _graph(self):
        """A model of lockstep's layers (functional, Sequential, loaded), run by C++; else a subclass with its own
        call(), or a Sequential holding Python layers, run from Python."""
        return not isinstance(self._cpp, _k.PythonLayer)

    def _tracked_layers(self):
        return self._cpp.sublayers() if self._graph else [self._cpp]

    @property
    def built(self):
        return self._cpp.built if self._graph else self.__dict__.get("_built", False)

    @built.setter
    def built(self, value):
        if self._graph:
            raise AttributeError("built is read-only for this model")
        self.__dict__["_built"] = value

    @property
    def input_shape(self):
        if self.inputs:
            shapes = [tuple(t.shape) for t in self.inputs]
            return shapes if self._list_inputs else shapes[0]
        if not self._graph:
            return _layers.Layer.input_shape.fget(self)
        return (None,) + tuple(self._cpp.input_shape())

    @property
    def input(self):
        if not self.inputs:
            raise AttributeError(f"model {self.name} has no symbolic inputs (it was not made from tf.keras.Input)")
        return self.inputs if self._list_inputs else self.inputs[0]

    @property
    def output(self):
        if not self.outputs:
            raise AttributeError(f"model {self.name} has no symbolic outputs (it was not made from tf.keras.Input)")
        return self.outputs if self._list_outputs else self.outputs[0]

    @property
    def output_shape(self):
        shapes = [tuple(t.shape) for t in self.outputs] if self.outputs and self.outputs[0] is not None else None
        if shapes is None:
            raise AttributeError("output_shape of a loaded model is not known to lockstep; call the model instead")
        return shapes if self._list_outputs else shapes[0]

    def get_layer(self, name=None, index=None):
        if index is not None:
            return self.layers[index]
        if not self._graph:
            for layer in self.layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: {[l.name for l in self.layers]}.")
        return _layers._RegistryLayer._wrap(self._cpp.get_layer(name))

    def _maybe_build(self, input_shape):
        if not self.built:
            self.build(input_shape)

    def build(self, input_shape):
        if self._graph:
            return self._cpp.build(list(input_shape)[1:])
        # A subclass builds its layers by running call() on a batch of one, as Keras builds it symbolically.
        if not self.built and input_shape is not None:
            self.built = True
            self(_np.zeros([1 if d is None else int(d) for d in input_shape], _np.float32))

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
                layer_range=None):
        text = self._cpp.summary_string() if self._graph else self._python_summary()
        (print_fn or print)(text.rstrip("\n"))

    def _python_summary(self):
        if not self.built:
            raise ValueError("This model has not yet been built. Build the model first by calling it on a batch of "
                             "data.")
        rows = [f" {l.name} ({type(l).__name__})".ljust(45) + f"{l.count_params()}" for l in self.layers]
        total = self.count_params()
        trainable = int(sum(int(_np.prod(v.shape)) for v in self.trainable_variables))
        rule = "_" * 65
        return "\n".join([f'Model: "{self.name}"', rule, " Layer (type)".ljust(45) + "Param #", "=" * 65] + rows +
                         ["=" * 65, f"Total params: {total:,}", f"Trainable params: {trainable:,}",
                          f"Non-trainable params: {total - trainable:,}", rule])

    def set_weights(self, weights):
        if not self._graph:
            return _layers.Layer.set_weights(self, weights)
        self._cpp.set_weights(list(weights))

    def get_config(self):
        self._needs_graph("get_config()")
        return json.loads(self._cpp.get_config())

    @classmethod
    def from_config(cls, config, custom_objects=None):
        kind = "Sequential" if cls is Sequential or "layers" in config and "input_layers" not in config else \
            "Functional"
        return model_from_json(json.dumps({"class_name": kind, "config": config}))

    def to_json(self, **kwargs):
        self._needs_graph("to_json()")
        return self._cpp.to_json()

    # ---- compile and the training loop ----

    def _needs_graph(self, what):
        if not self._graph:
            raise NotImplementedError(
                f"{what} of a model that runs Python code ({type(self).__name__}: a subclass with its own call(), or "
                "holding Python layers) is not implemented by lockstep (see docs/python.md): use save_weights, or "
                "build the model from lockstep's layers")

    @property
    def _engine(self):
        """The C++ model that compiles, trains, evaluates and saves weights: this model's own, or for a subclass
        with its own call() a Sequential model whose one layer calls it, made in the strategy scope the model was
        made in."""
        if self._graph:
            return self._cpp
        if self.__dict__.get("_wrapper") is None:
            with _RunScope(self):
                self.__dict__["_wrapper"] = _k.Sequential([self._cpp], self.name)
        return self._wrapper

    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly=False, steps_per_execution=1, jit_compile="auto", auto_scale_loss=True, **kwargs):
        if kwargs:
            raise _layers._serial.UnrecognizedArgumentsError(f"Unrecognized keyword arguments passed to compile: "
                                                              f"{kwargs}")
        for what, value in (("loss_weights", loss_weights), ("weighted_metrics", weighted_metrics)):
            if value is not None:
                raise NotImplementedError(f"compile({what}=...) is not implemented by lockstep")
        if isinstance(loss, (dict, list, tuple)) or isinstance(metrics, dict):
            raise NotImplementedError("per-output losses and metrics are not implemented by lockstep")
        metrics = [] if metrics is None else list(metrics) if isinstance(metrics, (list, tuple)) else [metrics]
        with _RunScope(self):  # what compile makes from names belongs to the model's strategy, as in Keras
            self._optimizer = _optimizers.get(optimizer)
            self._loss = _losses.get(loss)
            self._engine.compile(self._optimizer._cpp, None if self._loss is None else self._loss._cpp,
                                 [_metrics._compile_argument(m) for m in metrics])

    @property
    def optimizer(self):
        cpp = self._engine.optimizer
        return None if cpp is None else _optimizers.Optimizer._wrap(cpp)

    @property
    def loss(self):
        cpp = self._engine.loss
        if self._loss is not None and cpp is self._loss._cpp:
            return self._loss
        return None if cpp is None else _losses.Loss._wrap(cpp)

    @property
    def metrics(self):
        return [_metrics.Metric._wrap(m) for m in self._engine.metrics]

    @property
    def metrics_names(self):
        return ["loss"] + [m.name for m in self._engine.metrics]

    @property
    def distribute_strategy(self):
        """The strategy whose scope made the model (tf.distribute's default one otherwise)."""
        from .. import distribute

        return self.__dict__.get("_strategy") or distribute.get_strategy()

    @property
    def stop_training(self):
        return self._engine.stop_training

    @stop_training.setter
    def stop_training(self, value):
        self._engine.stop_training = bool(value)

    def _prepare_callbacks(self, callbacks, verbose):
        """The C++ callbacks for a run, every Python one given this model."""
        out, histories = [], []
        for cb in callbacks or []:
            if not isinstance(cb, _callbacks.Callback):
                raise TypeError(f"callbacks must be tf.keras.callbacks.Callback objects, got {cb!r}")
            cb.set_model(self)
            if isinstance(cb, _callbacks.History):
                histories.append(cb)
            elif isinstance(cb, _callbacks.ProgbarLogger) and verbose:
                continue  # the run shows its own progress bar
            else:
                out.append(cb._cpp_callback())
        return out, histories

    def fit(self, x=None, y=None, batch_size=None, epochs=None, verbose="auto", callbacks=None, validation_split=None,
            validation_data=None, shuffle=None, class_weight=None, sample_weight=None, initial_epoch=None,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=None, **kwargs):
        """Keras' fit. Its signature (Keras', shown by inspect and help) comes from the C++ table keras::fit_params;
        an argument left None here takes keras::FitOptions' default, the one default there is."""
        if kwargs:
            raise _layers._serial.UnrecognizedArgumentsError(f"Unrecognized keyword arguments passed to fit: "
                                                              f"{kwargs}")
        if _is_dataset(x):
            if y is not None:
                raise ValueError("`y` argument is not supported when using a dataset as input: the dataset yields "
                                 "(x, y) itself")
            x = x._cpp
        else:
            x, y = self._adjust_rank(_array(x)), _array(y, name="y")
            if y is None:
                raise ValueError("fit() needs targets: pass y (or a dataset of (x, y))")
        if _is_dataset(validation_data):
            validation_data = validation_data._cpp
        elif validation_data is not None:
            parts = tuple(validation_data)
            if len(parts) in (2, 3):  # any other length is refused by the C++ fit, with what it takes
                parts = (self._adjust_rank(_array(parts[0], name="validation_data's x")),
                         _array(parts[1], name="validation_data's y")) + parts[2:]
            validation_data = parts
        verbose = _verbose(verbose)
        cpp_callbacks, histories = self._prepare_callbacks(callbacks, verbose)
        with _RunScope(self):
            epochs_done, history, params = self._engine.fit(
                x, y, batch_size=batch_size, epochs=epochs, verbose=verbose, callbacks=cpp_callbacks,
                validation_split=validation_split, validation_data=validation_data, shuffle=shuffle,
                class_weight=class_weight, sample_weight=sample_weight, initial_epoch=initial_epoch,
                steps_per_epoch=steps_per_epoch, validation_steps=validation_steps,
                validation_batch_size=validation_batch_size, validation_freq=validation_freq)
        result = _callbacks.History()
        for h in histories + [result]:
            h._fill(epochs_done, history, self, params)
        self.history = result
        return result

    def _results(self, logs, return_dict):
        if return_dict:
            return dict(logs)
        values = [logs[name] for name in self.metrics_names if name in logs]
        return values[0] if len(values) == 1 else values

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False, **kwargs):
        if kwargs:
            raise _layers._serial.UnrecognizedArgumentsError(f"Unrecognized keyword arguments passed to evaluate: "
                                                              f"{kwargs}")
        if _is_dataset(x):
            x, y = x._cpp, None
        else:
            x, y = self._adjust_rank(_array(x, "evaluate")), _array(y, "evaluate", "y")
        verbose = _verbose(verbose)
        cpp_callbacks, _ = self._prepare_callbacks(callbacks, verbose)
        with _RunScope(self):
            logs = self._engine.evaluate(x, y, batch_size=batch_size, verbose=verbose, sample_weight=sample_weight,
                                         steps=steps, callbacks=cpp_callbacks)
        return self._results(logs, return_dict)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        verbose = _verbose(verbose)
        cpp_callbacks, _ = self._prepare_callbacks(callbacks, verbose)
        x = x._cpp if _is_dataset(x) else self._adjust_rank(_array(x, "predict"))
        with _RunScope(self):
            return self._engine.predict(x, batch_size=batch_size, verbose=verbose, steps=steps,
                                        callbacks=cpp_callbacks)

    def predict_on_batch(self, x):
        return _np.asarray(self(x, training=False))

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        return self._results(self._engine.train_on_batch(self._adjust_rank(x), y, sample_weight, class_weight),
                             return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        return self._results(self._engine.test_on_batch(self._adjust_rank(x), y, sample_weight), return_dict)

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    # ---- saving ----

    def save(self, filepath, overwrite=True, zipped=None, include_optimizer=True, save_format=None, **kwargs):
        self._needs_graph("save()")
        path = os.fspath(filepath)
        if path.endswith(".h5") or save_format == "h5":
            raise ValueError(f"model.save('{path}'): lockstep does not write the legacy HDF5 model format; save to a "
                             "'.keras' archive (or a directory), or use save_weights('x.weights.h5')")
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"{path} exists and overwrite=False")
        self._cpp.save(path, bool(include_optimizer))

    def save_weights(self, filepath, overwrite=True, **kwargs):
        path = os.fspath(filepath)
        if not overwrite and os.path.exists(path):
            raise FileExistsError(f"{path} exists and overwrite=False")
        self._engine.save_weights(path)

    def load_weights(self, filepath, skip_mismatch=False, **kwargs):
        if skip_mismatch:
            raise NotImplementedError("load_weights(skip_mismatch=True) is not implemented by lockstep")
        self._engine.load_weights(os.fspath(filepath))

    def _lockstep_trackable(self):
        return self._engine._lockstep_trackable()

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


# Keras' signatures, from the C++ tables (keras::fit_params and its kin): the defaults shown are Keras'.
for _name in ("fit", "evaluate", "predict"):
    getattr(Model, _name).__signature__ = _method_signature(_name)


class Sequential(Model):
    """tf.keras.Sequential: layers run one after the other. The first layer's input_shape= (or an Input/InputLayer
    first) builds the model at once; otherwise it is built by its first call or fit. A Sequential of lockstep's
    layers is a C++ model; one holding a Python layer (a Layer subclass, Lambda) or a model runs its layers from
    Python, and trains through the C++ loop as a subclassed model does."""

    def __init__(self, layers=None, trainable=True, name=None):
        self._init(_k.Sequential([], name or ""))
        self._list_inputs = self._list_outputs = False
        self.inputs = self.outputs = None
        self._entries = []
        for layer in layers or []:
            self.add(layer)
        if not trainable:
            self.trainable = False

    def add(self, layer):
        if isinstance(layer, _layers.KerasTensor):
            layer = layer._input_layer
            if layer is None:
                raise TypeError("Sequential takes layers, and tf.keras.Input only as its first entry")
        if not isinstance(layer, _layers.Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Received: layer={layer!r} of type "
                            f"{type(layer)}.")
        if isinstance(layer, _layers.InputLayer) and self._entries:
            raise ValueError("an Input can only be the first layer of a Sequential model")
        if self._graph and (isinstance(layer._cpp, _k.PythonLayer) or isinstance(layer, Model)):
            self._run_in_python()
        if not self._entries and layer._input_shape is not None and not isinstance(layer, _layers.InputLayer):
            self.__dict__["_entries"].append(_layers.InputLayer(shape=layer._input_shape,
                                                                batch_size=layer._batch_size))
            if self._graph:
                self._cpp.add(self._entries[0]._cpp)
        self.__dict__["_entries"].append(layer)
        if self._graph:
            self._cpp.add(layer._cpp)
            return
        if not isinstance(layer, _layers.InputLayer):
            self._track_entry(layer)
        first = self._entries[0]
        if isinstance(first, _layers.InputLayer):
            self.__dict__["_built"] = False
            self.build((None,) + tuple(first._input_shape))

    def _run_in_python(self):
        """From a C++ Sequential to one whose layers run from Python (a Python layer or a model was added)."""
        name = self._cpp.name
        _layers.Layer.__init__(self, name=name)
        for entry in self._entries:
            if not isinstance(entry, _layers.InputLayer):
                self._track_entry(entry)

    def _track_entry(self, layer):
        for cpp in layer._tracked_layers():
            self._cpp.track(cpp)

    def call(self, inputs, training=None, mask=None):
        if self._graph:
            return Model.call(self, inputs, training=training)
        x = inputs
        for layer in self._entries:
            if isinstance(layer, _layers.InputLayer):
                continue
            x = layer(x, training=training)
        return x

    def pop(self):
        raise NotImplementedError("Sequential.pop is not implemented by lockstep")


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):  # noqa: A002 - Keras' name
    """A model saved by model.save (a .keras archive, Keras 3's own included, or lockstep's directory)."""
    path = os.fspath(filepath)
    if os.path.isfile(os.path.join(path, "lockstep_saved_model.json")):
        raise ValueError(f"{path} is a SavedModel directory (written by tf.saved_model.save), not a Keras model: "
                         "load it with tf.saved_model.load, or save the model with model.save('model.keras')")
    return Model._wrap(_k.models.load_model(path, bool(compile)))


def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
    model.save(filepath, overwrite=overwrite, zipped=zipped, **kwargs)


def clone_model(model, input_tensors=None, clone_function=None, **kwargs):
    """A model of the same layers and configuration with fresh weights (Keras' clone_model)."""
    if input_tensors is not None or clone_function is not None or kwargs:
        raise NotImplementedError("clone_model's input_tensors, clone_function and other arguments are not "
                                  "implemented by lockstep")
    return model_from_json(model.to_json())


def model_from_json(json_string, custom_objects=None):
    return Model._wrap(_k.models.model_from_json(json_string))


_unimplemented.install(globals(), "tf.keras.models")
