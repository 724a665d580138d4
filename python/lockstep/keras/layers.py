"""tf.keras.layers: a class for every layer of lockstep's C++ layer registry, taking Keras' arguments. A layer is
made by turning its arguments into the Keras config the C++ registry reads (so one place, the registry, knows each
layer), and is called eagerly on tensors or symbolically on KerasTensors to build a functional Model."""
import inspect
import json
import operator

import numpy as _np

from .. import _lockstep, _nest, _unimplemented, dtypes as _dtypes
from .._module import Module as _Module
from .._tensor import TensorShape
from . import _registry, _serial, activations as _activations

_k = _lockstep.keras

# What Keras 3 still takes from Keras 2: the input's shape, given to a model's first layer, and initial weights.
_LEGACY = ("input_shape", "batch_input_shape", "batch_size", "input_dim", "weights")
# Layers called on a list of tensors.
_MERGING = ("Add", "Concatenate")


def _config_value(key, value):
    if key == "activation":
        return _activations.name_of(value)
    if key.endswith("_initializer") or key.endswith("_regularizer"):
        return value if value is None or isinstance(value, (str, dict)) else _serial.plain(value)
    if key == "dtype":
        return _serial.keras_dtype_name(value)
    return _serial.plain(value)


def _shape_tuple(dims):
    return tuple(None if d is None or d < 0 else int(d) for d in dims)


class KerasTensor:
    """A symbolic tensor: a model input (tf.keras.Input) or a layer's output on one, for functional models. Its shape
    has the batch axis first, unknown (None)."""

    def __init__(self, cpp, input_layer=None):
        self._cpp, self._input_layer = cpp, input_layer

    @property
    def shape(self):
        return TensorShape((None,) + _shape_tuple(self._cpp.shape))

    @property
    def dtype(self):
        return _dtypes._BY_ENUM[self._cpp.dtype]

    @property
    def ndim(self):
        return len(self._cpp.shape) + 1

    def __repr__(self):
        return f"<KerasTensor shape={tuple(self.shape)}, dtype={self.dtype.name}>"

    def _as_tensor(self, *args):
        raise SymbolicTensorError("a symbolic tensor (a Keras model's input or a layer's output on one) has no value: "
                                  "this function cannot take one in lockstep (see docs/python.md); use a layer, a "
                                  "Lambda layer or a subclassed model")

    __array__ = _lockstep_tensor_ = _as_tensor


class SymbolicTensorError(NotImplementedError):
    """Raised where a symbolic tensor is used as a value; lockstep's tf.* functions catch it and become a
    TFOpLambda layer (lockstep._symbolic)."""


def _operator(function, reflected=False):
    """An operator on symbolic tensors, as Keras' op layers: a TFOpLambda layer of the model applies it to the
    tensors when the model runs."""
    def apply(*operands):
        return TFOpLambda(function, operands[::-1] if reflected else operands)._apply()
    return apply


for _name, _function in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                         ("truediv", operator.truediv), ("pow", operator.pow), ("matmul", operator.matmul)):
    setattr(KerasTensor, f"__{_name}__", _operator(_function))
    setattr(KerasTensor, f"__r{_name}__", _operator(_function, reflected=True))
KerasTensor.__neg__ = _operator(operator.neg)
KerasTensor.__getitem__ = _operator(operator.getitem)
del _name, _function


class Layer(_Module):
    """tf.keras.layers.Layer, a tf.Module (as in Keras 2). lockstep's own layers (Dense, Conv2D...) are C++ ones
    (_RegistryLayer). A subclass written in Python defines build(input_shape) with add_weight and call(inputs[,
    training]), made of lockstep's ops and layers, and runs eagerly (in models called directly and in custom
    training loops). Either way the layer is a C++ layer (self._cpp): a Python subclass's tracks, in C++, the
    layers and Variables its attributes hold and the weights and losses it adds, and reads its weights, losses and
    trainable flag from there, as every layer does."""

    def __init__(self, trainable=True, name=None, dtype=None, autocast=True, **kwargs):
        unknown = {k: v for k, v in kwargs.items() if k not in _LEGACY}
        if unknown:
            raise _serial.UnrecognizedArgumentsError(f"Unrecognized keyword arguments passed to "
                                                     f"{type(self).__name__}: {unknown}")
        cpp = _k.layers.python_layer(self, type(self).__name__, name or _unique_name(type(self).__name__))
        object.__setattr__(self, "_cpp", cpp)
        _serial.remember(self, cpp)
        cpp.trainable = bool(trainable)
        self.built = False
        self._input_shape, self._batch_size = _legacy_input_shape(kwargs), kwargs.get("batch_size")

    def __setattr__(self, name, value):
        # Layers and Variables assigned to attributes (alone, in lists or in dicts) are this layer's sublayers and
        # weights, as Keras tracks them: in C++, where its weights are read.
        cpp = self.__dict__.get("_cpp")
        if isinstance(cpp, _k.Layer) and not name.startswith("_"):
            from .._variable import Variable

            items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
            for item in items:
                if isinstance(item, Layer) and item is not self:
                    for layer in item._tracked_layers():
                        cpp.track(layer)
                elif isinstance(item, Variable):
                    cpp.track_weight(item, None)
        object.__setattr__(self, name, value)

    def _tracked_layers(self):
        """The C++ layers a layer holding this one tracks: this one (a model of lockstep's layers: its layers)."""
        return [self._cpp]

    def build(self, input_shape):
        pass

    def _maybe_build(self, input_shape):
        if not self.built:
            self.build(input_shape)
            self.built = True

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"Layer {type(self).__name__} does not have a `call()` method implemented.")

    def __call__(self, inputs, *args, training=None, mask=None, **kwargs):
        if _symbolic(inputs):
            if args or kwargs:
                raise NotImplementedError(f"calling the Python layer {type(self).__name__} on symbolic tensors with "
                                          "arguments other than the inputs and training is not implemented by lockstep")
            return self._symbolic_call(inputs, training)
        if isinstance(inputs, (list, tuple)):
            self._maybe_build([TensorShape(getattr(i, "shape", None)) for i in inputs])
        else:
            shape = getattr(inputs, "shape", None)
            self._maybe_build(None if shape is None else TensorShape(shape))
        self._cpp.clear_call_losses()  # add_loss keeps the losses of the latest call, as Keras
        if training is not None and "training" in inspect.signature(self.call).parameters:
            kwargs["training"] = training
        return self.call(inputs, *args, **kwargs)

    def _symbolic_call(self, inputs, training=None):
        """A call on symbolic tensors: this object becomes a node of the functional model (its C++ layer, held by
        the graph with this object), built on the first call for the inputs' shapes; a second call shares its
        weights. A training argument given here fixes the mode of this call (Keras 2's base_model(x,
        training=False))."""
        node = self.__dict__.get("_node")
        if node is None:
            cpp = self._cpp
            if not isinstance(cpp, _k.PythonLayer):  # a model of lockstep's layers, called as a layer
                cpp = _k.layers.python_layer(self, type(self).__name__, self.name)
                for layer in self._tracked_layers():
                    cpp.track(layer)
            node = cpp.held()
            _serial.remember(self, node)
            object.__setattr__(self, "_node", node)
        if isinstance(inputs, KerasTensor):
            return KerasTensor(node.call_symbolic(inputs._cpp, training))
        return KerasTensor(node.call_symbolic_list([i._cpp for i in inputs], training))

    def _output_shape_for(self, input_shape):
        """For a symbolic call on inputs of input_shape ((None, ...), or a list of them): builds the layer, and
        gives the output's shape without the batch axis (-1 where unknown) from compute_output_shape when the
        subclass defines it, else from a call on zeros (a batch of one, training=False)."""
        shapes = [TensorShape(s) for s in input_shape] if isinstance(input_shape, list) else TensorShape(input_shape)
        self._maybe_build(shapes)
        if type(self).compute_output_shape is not Layer.compute_output_shape:
            out = TensorShape(self.compute_output_shape(shapes))
        else:
            zeros = lambda s: _np.zeros([1 if d is None else d for d in s], _np.float32)
            probe = [zeros(s) for s in shapes] if isinstance(shapes, list) else zeros(shapes)
            result = self(probe, training=False)
            if isinstance(result, (list, tuple, dict)):
                raise NotImplementedError(f"the Python layer {type(self).__name__} returns several tensors: a "
                                          "functional model's Python layers must return one tensor in lockstep")
            out = TensorShape(result.shape)
        return [-1 if d is None else int(d) for d in list(out)[1:]]

    def compute_output_shape(self, input_shape):
        raise NotImplementedError(f"Layer {type(self).__name__} does not define compute_output_shape")

    def _module_attributes(self, attribute_name=None):
        """What tf.Module's walk sees of this layer: a C++ layer's or model's weights (its attributes do not hold
        them), else its attributes, as any Module's."""
        if attribute_name is None and not isinstance(self._cpp, _k.PythonLayer):
            return [("weights", list(self.weights))]
        return _Module._module_attributes(self, attribute_name)

    def add_loss(self, loss):
        """A loss this call adds (an activity penalty): model.losses and fit's loss include it until the next
        call of this layer replaces it."""
        self._cpp.add_call_loss(loss() if callable(loss) else loss)

    # add_weight's positional parameters: Keras 2 puts the name first, Keras 3 the shape.
    _ADD_WEIGHT_KERAS2 = ("name", "shape", "dtype", "initializer", "regularizer", "trainable", "constraint")
    _ADD_WEIGHT_KERAS3 = ("shape", "initializer", "dtype", "trainable", "autocast", "regularizer", "constraint")

    def add_weight(self, *args, **kwargs):
        """A Variable named "<layer>/<name>" with values from `initializer` (glorot_uniform, as Keras), taking
        Keras 2's and Keras 3's argument orders (a first argument that is a string is the name)."""
        from .. import Variable
        from . import initializers, regularizers

        order = self._ADD_WEIGHT_KERAS2 if args and isinstance(args[0], str) else self._ADD_WEIGHT_KERAS3
        for key, value in zip(order, args):
            if key in kwargs:
                raise TypeError(f"add_weight() got multiple values for argument '{key}'")
            kwargs[key] = value
        if kwargs.get("constraint") is not None:
            raise NotImplementedError("add_weight(constraint=...) is not implemented by lockstep")
        init = initializers.get(kwargs.get("initializer") or "glorot_uniform")
        shape = kwargs.get("shape")
        shape = () if shape is None else tuple(int(d) for d in shape)
        value = init(shape, dtype=kwargs.get("dtype") or "float32")
        variable = Variable(value, trainable=bool(kwargs.get("trainable", True)),
                            name=f"{self.name}/{kwargs.get('name') or 'variable'}")
        regularizer = kwargs.get("regularizer")
        if not callable(regularizer) or isinstance(regularizer, type):  # a function of the weight is used as it is
            regularizer = regularizers.get(regularizer)
        self._cpp.track_weight(variable, regularizer)
        return variable

    @property
    def _tracked_sublayers(self):
        """The layers it tracks, in order, as Python objects (a subclassed model's layers)."""
        return [_RegistryLayer._wrap(layer) for layer in self._cpp.sublayers()]

    name = property(lambda self: self._cpp.name)
    weights = variables = property(lambda self: self._cpp.weights())
    trainable_weights = trainable_variables = property(lambda self: self._cpp.trainable_weights())
    non_trainable_weights = non_trainable_variables = property(lambda self: self._cpp.non_trainable_weights())
    losses = property(lambda self: self._cpp.losses())

    @property
    def trainable(self):
        return self._cpp.trainable

    @trainable.setter
    def trainable(self, value):
        """Freezes (or thaws) the layer and every layer inside it, as Keras does; compile again afterwards."""
        self._cpp.trainable = bool(value)

    dtype = variable_dtype = property(lambda self: "float32")
    compute_dtype = property(lambda self: "float32")
    input_shape = property(lambda self: None if self._input_shape is None else (None,) + tuple(self._input_shape))

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable, "dtype": "float32"}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def count_params(self):
        return self._cpp.count_params()

    def get_weights(self):
        return [v.numpy() for v in self.weights]

    def set_weights(self, weights):
        variables = self.weights
        if len(weights) != len(variables):
            raise ValueError(f"Layer {self.name} expects {len(variables)} weights, but the given list has "
                             f"{len(weights)}: pass one array per weight, as get_weights() gives them")
        for v, w in zip(variables, weights):
            v.assign(w)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


_name_counts = {}


def _unique_name(class_name):
    """Keras' default name for a Python layer or model: its class in snake_case, numbered from the second."""
    return _numbered("".join("_" + c.lower() if c.isupper() and i and not class_name[i - 1].isupper() else c.lower()
                             for i, c in enumerate(class_name)))


def _numbered(base):
    n = _name_counts.get(base, 0)
    _name_counts[base] = n + 1
    return base if n == 0 else f"{base}_{n}"


def _legacy_input_shape(kwargs):
    if "input_shape" in kwargs:
        return tuple(kwargs["input_shape"])
    if "batch_input_shape" in kwargs:
        return tuple(kwargs["batch_input_shape"])[1:]
    if "input_dim" in kwargs:
        return (kwargs["input_dim"],)
    return None


def _symbolic(inputs):
    return isinstance(inputs, KerasTensor) or (isinstance(inputs, (list, tuple)) and bool(inputs) and
                                               all(isinstance(i, KerasTensor) for i in inputs))


class _RegistryLayer(Layer):
    """A layer of lockstep's C++ layer registry: the class's Keras arguments become the Keras config the registry
    reads, and calls run the C++ layer."""

    _class_name = None
    _signature = None

    def __init__(self, *args, **kwargs):
        # Keras' defaults included: the registry reads a complete config, as Keras writes one.
        # The signature is the C++ table's (with every layer's keyword arguments); None is Keras' "not given".
        _, config = _serial.bind(self._class_name, self._signature, args, kwargs, extra=_LEGACY)
        config = {k: _config_value(k, v) for k, v in config.items() if v is not None}
        if kwargs.get("weights") is not None and "weights" not in self._signature.parameters:
            raise ValueError(f"{self._class_name}: weights= is not supported by lockstep; call set_weights once the "
                             "layer is built")
        self._input_shape, self._batch_size = _legacy_input_shape(kwargs), kwargs.get("batch_size")
        self._cpp = _k.layers.from_config(self._class_name, json.dumps(config))
        _serial.remember(self, self._cpp)

    @classmethod
    def _wrap(cls, cpp):
        """The Python object of a C++ layer (one the program made, or a new one for a loaded model's)."""
        return _serial.wrap(cpp, globals(), _RegistryLayer, _input_shape=None, _batch_size=None)

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)

    def __call__(self, inputs, *args, training=None, mask=None, **kwargs):
        if mask is not None:  # ignoring it would average or attend over the masked steps: a wrong answer
            raise NotImplementedError(f"{type(self).__name__}: mask= is not implemented by lockstep's layers; "
                                      "drop the masked steps from the data, or call without a mask")
        if isinstance(inputs, KerasTensor):
            return KerasTensor(self._cpp.call_symbolic(inputs._cpp, training))
        if _symbolic(inputs):
            return KerasTensor(self._cpp.call_symbolic_list([i._cpp for i in inputs], training))
        if self._cpp.class_name in _MERGING and isinstance(inputs, (list, tuple)):
            return self._cpp.call_list(list(inputs), bool(training))
        return self._cpp.call(inputs, bool(training))

    def build(self, input_shape):
        self._cpp.build(list(TensorShape(input_shape))[1:])

    def compute_output_shape(self, input_shape):
        dims = list(TensorShape(input_shape))
        return (dims[0],) + _shape_tuple(self._cpp.compute_output_shape(dims[1:]))

    built = property(lambda self: self._cpp.built)
    compute_dtype = property(lambda self: "bfloat16" if self._cpp.dtype_policy == "mixed_bfloat16" else "float32")

    @property
    def dtype_policy(self):
        from .mixed_precision import Policy

        return Policy(self._cpp.dtype_policy)

    def get_config(self):
        return json.loads(self._cpp.get_config())

    @classmethod
    def from_config(cls, config):
        return cls._wrap(_k.layers.from_config(cls._class_name or config["class_name"], json.dumps(config)))

    def __getattr__(self, name):
        # A weight by its Keras attribute name: dense.kernel, dense.bias, norm.gamma.
        if not name.startswith("_") and "_cpp" in self.__dict__:
            for v in self._cpp.weights():
                if v._name.rsplit("/", 1)[-1].split(":")[0] == name:
                    return v
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


class InputLayer(_RegistryLayer):
    """tf.keras.layers.InputLayer: a model's input of `shape` (without the batch axis)."""

    _class_name = "InputLayer"
    _signature = __signature__ = _registry.signature("layer", "InputLayer")

    def __init__(self, *args, **kwargs):
        # Keras' arguments (the C++ table's), and Keras 2's input_shape and batch_input_shape.
        _, a = _serial.bind("InputLayer", self._signature, args, kwargs, extra=("input_shape", "batch_input_shape"))
        shape, batch_size, batch_shape = kwargs.get("input_shape", a["shape"]), a["batch_size"], a["batch_shape"]
        batch_shape = kwargs.get("batch_input_shape", batch_shape)
        if batch_shape is not None:
            shape, batch_size = tuple(batch_shape)[1:], tuple(batch_shape)[0]
        if shape is None:
            raise ValueError("You must pass a `shape` argument.")
        for what in ("sparse", "ragged", "optional"):
            if a[what]:
                raise ValueError(f"InputLayer: {what}=True is not supported by lockstep; remove it")
        if a["input_tensor"] is not None:
            raise ValueError("InputLayer: input_tensor= is not supported by lockstep; pass shape= instead")
        dtype, name = a["dtype"], a["name"]
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        cpp, tensor = _k.layers.Input([None if d is None else int(d) for d in shape],
                                      _dtypes.as_dtype(dtype or "float32")._lockstep_dtype, name or "")
        self._cpp, self._input_shape, self._batch_size = cpp, shape, batch_size
        self._keras_tensor = KerasTensor(tensor, self)
        _serial.remember(self, cpp)

    @property
    def output(self):
        if "_keras_tensor" not in self.__dict__:
            self._keras_tensor = KerasTensor(_k.layers.input_of(self._cpp), self)
        return self._keras_tensor


class Lambda(Layer):
    """tf.keras.layers.Lambda: a Python function of the inputs as a layer; it runs from Python."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        if mask is not None:
            raise NotImplementedError("Lambda(mask=...) is not implemented by lockstep")
        self.function, self.arguments = function, dict(arguments or {})
        self._takes_training = "training" in inspect.signature(function).parameters

    def call(self, inputs, training=None):
        if self._takes_training:
            return self.function(inputs, training=training, **self.arguments)
        return self.function(inputs, **self.arguments)


class TFOpLambda(Layer):
    """An operator or a tf.* function applied to symbolic tensors, as Keras 2's op layers: `args` and `kwargs` are
    the call's arguments, the symbolic tensors among them (in lists and dicts too) standing for this layer's inputs,
    in order."""

    def __init__(self, function, args, kwargs=None, name=None):
        super().__init__(name=_numbered(name or f"tf.__operators__.{function.__name__}"))
        self._function, self._arguments = function, [list(args), dict(kwargs or {})]
        self._symbolic = [x for x in _nest.flatten(self._arguments) if isinstance(x, KerasTensor)]

    def _apply(self):
        return self(self._symbolic[0] if len(self._symbolic) == 1 else list(self._symbolic))

    def call(self, inputs):
        tensors = iter([inputs] if len(self._symbolic) == 1 else inputs)
        args, kwargs = _nest.map_structure(lambda x: next(tensors) if isinstance(x, KerasTensor) else x,
                                           self._arguments)
        return self._function(*args, **kwargs)


def Input(shape=None, batch_size=None, dtype=None, sparse=None, batch_shape=None, name=None, tensor=None,
          optional=False):
    """tf.keras.Input: the symbolic tensor of a model input of `shape` (without the batch axis)."""
    return InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, sparse=sparse, batch_shape=batch_shape,
                      input_tensor=tensor, optional=optional, name=name).output


def _normalization_init(self, axis=-1, *args, **kwargs):
    if axis is None or (isinstance(axis, (list, tuple)) and list(axis) != [-1]):
        raise ValueError(f"Normalization(axis={axis!r}) is not supported by lockstep: it normalises each feature "
                         "of the last axis (axis=-1)")
    _RegistryLayer.__init__(self, axis, *args, **kwargs)


def _adapt(self, data, batch_size=None, steps=None):
    """Keras' Normalization.adapt: the mean and variance of `data` (an array, or a Dataset of feature batches,
    `steps` of them if given) over every axis but the last."""
    if not hasattr(data, "shape"):
        batches = data.take(steps) if steps is not None else data
        data = _np.concatenate([_np.asarray(b) for b in batches])
    _k.layers.adapt(self._cpp, data)


# Methods that one layer class has beyond the shared ones.
_METHODS = {"Normalization": {"__init__": _normalization_init, "adapt": _adapt}}

# One class per C++ layer, with the signature of its parameter table (InputLayer is made by Input()).
_registry.define(globals(), "layer", _RegistryLayer, methods=_METHODS, skip=("InputLayer",))
class Softmax(_RegistryLayer):
    """tf.keras.layers.Softmax over the last axis: lockstep's Activation("softmax") layer (saved as that)."""

    _class_name = "Activation"
    _signature = _registry.signature("layer", "Activation")

    def __init__(self, axis=-1, **kwargs):
        if axis != -1:
            raise NotImplementedError(f"Softmax(axis={axis}) is not implemented by lockstep: only the last axis")
        super().__init__("softmax", **kwargs)


class ReLU(_RegistryLayer):
    """tf.keras.layers.ReLU with Keras' defaults: lockstep's Activation("relu") layer (saved as that)."""

    _class_name = "Activation"
    _signature = _registry.signature("layer", "Activation")

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        if max_value is not None or negative_slope or threshold:
            raise NotImplementedError("ReLU's max_value, negative_slope and threshold are not implemented by "
                                      "lockstep: use ReLU() or Activation('relu')")
        super().__init__("relu", **kwargs)


# Keras' other spellings.
MaxPool2D, AvgPool2D = MaxPooling2D, AveragePooling2D  # noqa: F821
GlobalAvgPool2D, GlobalMaxPool2D = GlobalAveragePooling2D, GlobalMaxPooling2D  # noqa: F821
MaxPool1D, AvgPool1D = MaxPooling1D, AveragePooling1D  # noqa: F821
GlobalAvgPool1D, GlobalMaxPool1D = GlobalAveragePooling1D, GlobalMaxPooling1D  # noqa: F821

_unimplemented.install(globals(), "tf.keras.layers")


class DenseFeatures(Layer):
    """Keras 2's tf.keras.layers.DenseFeatures: a dict of raw features through tf.feature_column dense columns,
    concatenated in the columns' name order as [batch, total width]; embedding columns' tables are its weights."""

    def __init__(self, feature_columns, trainable=True, name=None, partitioner=None, **kwargs):
        from .. import feature_column

        if partitioner is not None:
            raise NotImplementedError("DenseFeatures(partitioner=...) is not implemented by lockstep")
        super().__init__(trainable=trainable, name=name, **kwargs)
        self._columns = feature_column.dense_columns(feature_columns)
        self._tables = {}

    def build(self, input_shape):
        from .. import feature_column

        for column in self._columns:
            if isinstance(column, feature_column.EmbeddingColumn):
                value = column._initial_value()
                table = self.add_weight(name=f"{column.name}/embedding_weights", shape=value.shape,
                                        initializer="zeros", trainable=column.trainable)
                table.assign(value)
                self._tables[column.name] = table

    def _embedding(self, column):
        return self._tables[column.name]

    def call(self, features, cols_to_output_tensors=None, training=None):
        from .. import _lockstep
        from .. import feature_column

        if not isinstance(features, dict):
            raise ValueError(f"We expected a dictionary here. Instead we got: {type(features).__name__}; give "
                             "DenseFeatures a dict of feature name to tensor")
        outputs = []
        for column in self._columns:
            outputs.append(feature_column.dense_tensor(column, features, self))
            if cols_to_output_tensors is not None:
                cols_to_output_tensors[column] = outputs[-1]
        return _lockstep.ops.concat(outputs, 1)

    def compute_output_shape(self, input_shape):
        return (None, sum(int(_np.prod(c.variable_shape)) for c in self._columns))

    def get_config(self):
        raise NotImplementedError("DenseFeatures.get_config (serializing feature columns) is not implemented by "
                                  "lockstep (see docs/python.md)")
