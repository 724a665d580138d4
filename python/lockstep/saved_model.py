"""tf.saved_model: save a tf.Module (Keras models included) with its variables and signatures, and load it back in
this process or a fresh one. lockstep's tf.functions are Python run eagerly, not graphs, so its SavedModel keeps each
object's class by importable name and its state: lockstep_saved_model.json, variables/ (a lockstep checkpoint, and
lockstep's directory format for Keras models) and assets/. TensorFlow cannot load it (it has no saved_model.pb)."""
import base64
import enum
import importlib
import inspect
import json
import os
import sys
import types

import numpy as _np

from . import _lockstep, _unimplemented, errors as _errors
from ._module import Module as _Module
from ._tensor import Tensor as _Tensor, TensorShape as _TensorShape

# TensorFlow's constants (tag_constants, signature_constants, constants).
SERVING, TRAINING, GPU, TPU = "serve", "train", "gpu", "tpu"
DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
PREDICT_INPUTS, PREDICT_OUTPUTS, PREDICT_METHOD_NAME = "inputs", "outputs", "tensorflow/serving/predict"
CLASSIFY_INPUTS, CLASSIFY_METHOD_NAME = "inputs", "tensorflow/serving/classify"
CLASSIFY_OUTPUT_CLASSES, CLASSIFY_OUTPUT_SCORES = "classes", "scores"
REGRESS_INPUTS, REGRESS_OUTPUTS, REGRESS_METHOD_NAME = "inputs", "outputs", "tensorflow/serving/regress"
SAVED_MODEL_FILENAME_PB, SAVED_MODEL_FILENAME_PBTXT = "saved_model.pb", "saved_model.pbtxt"
SAVED_MODEL_SCHEMA_VERSION = 1
VARIABLES_DIRECTORY, VARIABLES_FILENAME = "variables", "variables"
ASSETS_DIRECTORY, ASSETS_KEY = "assets", "saved_model_assets"
DEBUG_DIRECTORY, DEBUG_INFO_FILENAME_PB = "debug", "saved_model_debug_info.pb"

_METADATA = "lockstep_saved_model.json"
_FORMAT, _VERSION = "lockstep.saved_model", 1


class _VariablePolicy(enum.Enum):
    """tf.saved_model.experimental.VariablePolicy: how variables' devices are saved."""

    NONE = None
    SAVE_VARIABLE_DEVICES = "save_variable_devices"
    EXPAND_DISTRIBUTED_VARIABLES = "expand_distributed_variables"


def _variable_policy(value, where):
    """The policy `value` names; lockstep's variables live on one device, so only NONE is meaningful."""
    if isinstance(value, str):
        value = value.lower()
    try:
        policy = value if isinstance(value, _VariablePolicy) else _VariablePolicy(value)
    except ValueError:
        raise ValueError(f"{where}: experimental_variable_policy={value!r} is not a VariablePolicy; use one of "
                         f"{[p.value for p in _VariablePolicy]}") from None
    if policy is not _VariablePolicy.NONE:
        raise NotImplementedError(_unimplemented.message(f"{where} with experimental_variable_policy={policy.name}"))
    return policy


def _refuse(where, **given):
    """NotImplementedError for the first option given a value lockstep does not implement."""
    for name, value in given.items():
        if value:
            raise NotImplementedError(_unimplemented.message(f"{where} with {name}={value!r}"))


class SaveOptions:
    """tf.saved_model.SaveOptions. lockstep writes no graphs, so the graph options (namespace_whitelist, custom
    gradients, the debug stripper, skipping the saver) change nothing; experimental_io_device is where TF reads and
    writes from, and lockstep always does so from the host; extra_tags are saved and checked by load."""

    __slots__ = ("namespace_whitelist", "save_debug_info", "function_aliases", "experimental_debug_stripper",
                 "experimental_io_device", "experimental_variable_policy", "experimental_custom_gradients",
                 "experimental_image_format", "experimental_skip_saver", "experimental_sharding_callback",
                 "extra_tags")

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_debug_stripper=False, experimental_io_device=None, experimental_variable_policy=None,
                 experimental_custom_gradients=True, experimental_image_format=False, experimental_skip_saver=False,
                 experimental_sharding_callback=None, extra_tags=None):
        _refuse("tf.saved_model.SaveOptions", save_debug_info=save_debug_info,
                experimental_image_format=experimental_image_format,
                experimental_sharding_callback=experimental_sharding_callback)
        if function_aliases is not None and not isinstance(function_aliases, dict):
            raise TypeError(f"function_aliases must be a dict of alias name -> tf.function, got {function_aliases!r}")
        self.namespace_whitelist = list(namespace_whitelist or [])
        self.save_debug_info = save_debug_info
        self.function_aliases = dict(function_aliases or {})
        self.experimental_debug_stripper = experimental_debug_stripper
        self.experimental_io_device = experimental_io_device
        self.experimental_variable_policy = _variable_policy(experimental_variable_policy,
                                                             "tf.saved_model.SaveOptions")
        self.experimental_custom_gradients = experimental_custom_gradients
        self.experimental_image_format = experimental_image_format
        self.experimental_skip_saver = experimental_skip_saver
        self.experimental_sharding_callback = experimental_sharding_callback
        self.extra_tags = _tags(extra_tags) if extra_tags is not None else None


class LoadOptions:
    """tf.saved_model.LoadOptions. lockstep's SavedModel always holds every variable, so a partial checkpoint
    cannot arise; experimental_io_device is the host in lockstep, as for SaveOptions."""

    __slots__ = ("allow_partial_checkpoint", "experimental_io_device", "experimental_skip_checkpoint",
                 "experimental_variable_policy", "experimental_load_function_aliases")

    def __init__(self, allow_partial_checkpoint=False, experimental_io_device=None,
                 experimental_skip_checkpoint=False, experimental_variable_policy=None,
                 experimental_load_function_aliases=False):
        _refuse("tf.saved_model.LoadOptions", experimental_skip_checkpoint=experimental_skip_checkpoint)
        self.allow_partial_checkpoint = allow_partial_checkpoint
        self.experimental_io_device = experimental_io_device
        self.experimental_skip_checkpoint = experimental_skip_checkpoint
        self.experimental_variable_policy = _variable_policy(experimental_variable_policy,
                                                             "tf.saved_model.LoadOptions")
        self.experimental_load_function_aliases = experimental_load_function_aliases


def _tags(tags):
    """Tags as a sorted list: TF takes one string or a collection of them."""
    if isinstance(tags, str):
        return [tags]
    if not all(isinstance(t, str) for t in tags):
        raise TypeError(f"tags must be strings, got {tags!r}")
    return sorted(set(tags))


# ---- what an object's state is made of ----

def _is_keras(value):
    from . import keras

    return not isinstance(keras, _unimplemented.Missing) and isinstance(value, keras.layers.Layer)


def _is_graph_model(value):
    """A Keras Sequential or functional model of lockstep's layers: its own saving writes it whole."""
    from .keras import models

    return isinstance(value, models.Model) and value._graph


def _is_tf_function(value):
    return callable(value) and hasattr(value, "python_function")


def _reference(value):
    """"module:qualname" when that name finds `value` again (in a fresh process too, unless the module is __main__),
    else None."""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not module or not qualname or "<" in qualname:
        return None
    try:
        found = _resolve(module, qualname)
    except (ImportError, AttributeError):
        return None
    # A concrete function of an importable tf.function is found as that tf.function.
    same = found is value or (_is_tf_function(found) and _is_tf_function(value)
                              and found.python_function is value.python_function)
    return f"{module}:{qualname}" if same else None


def _resolve(module, qualname):
    """The object at module:qualname; a module that importlib cannot find (lockstep._lockstep.ops, a compiled
    submodule) is reached as an attribute of its parent."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        try:
            found = sys.modules.get(name) or importlib.import_module(name)
            break
        except ModuleNotFoundError:
            if n == 1:
                raise
    for attribute in parts[n:] + qualname.split("."):
        found = getattr(found, attribute)
    return found


def _array_entry(value):
    array = _np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    if array.dtype.kind not in "biuf":
        return None
    return {"dtype": array.dtype.str, "shape": list(array.shape),
            "data": base64.b64encode(_np.ascontiguousarray(array).tobytes()).decode()}


def _array(entry):
    return _np.frombuffer(base64.b64decode(entry["data"]), _np.dtype(entry["dtype"])).reshape(entry["shape"]).copy()


class _Writer:
    """Turns an object graph into JSON entries: each Module once (by identity), each Variable once (saved in the
    checkpoint under the path it was first met at), Keras models as their own directories."""

    def __init__(self, export_dir):
        self._dir = export_dir
        self.objects, self.variables = [], []
        self.modules = []  # (index, module) in the order met, to find whose method a signature is
        self._index = {}

    def object(self, value, path):
        key = id(value)
        if key in self._index:
            return self._index[key]
        index = len(self.objects)
        self._index[key] = index
        self.objects.append(None)
        self.modules.append((index, value))
        if _is_keras(value):
            self.objects[index] = self._keras(value, path, index)
        else:
            cls = type(value)
            if _reference(cls) is None:
                raise ValueError(f"tf.saved_model.save: the object at '{path or 'root'}' is of class "
                                 f"{cls.__qualname__}, defined inside a function; lockstep's SavedModel recreates "
                                 f"objects from their class: define {cls.__name__} at the top level of a module")
            attributes = {}
            for name, item in vars(value).items():
                entry = self.value(item, f"{path}.{name}" if path else name)
                if entry is not None:
                    attributes[name] = entry
            self.objects[index] = {"kind": "module", "class": _reference(cls), "attributes": attributes}
        return index

    def _keras(self, model, path, index):
        if not _is_graph_model(model):
            raise NotImplementedError(
                f"tf.saved_model.save of the Keras {type(model).__name__} at '{path or 'root'}' is not implemented "
                "by lockstep (see docs/python.md): it saves Sequential and functional models of lockstep's layers; "
                "save a layer inside such a model, or use save_weights")
        relative = os.path.join(VARIABLES_DIRECTORY, "keras", str(index))
        model.save(os.path.join(self._dir, relative))
        return {"kind": "keras", "path": relative}

    def variable(self, variable, path):
        key = ("variable", variable._unique_id())
        if key not in self._index:
            self._index[key] = len(self.variables)
            used = {k for k, _ in self.variables}
            path = path.replace("/", ".")  # the C++ checkpoint's separator
            self.variables.append((path if path not in used else f"{path}.{len(self.variables)}", variable))
        return self._index[key]

    def value(self, value, path):
        """The JSON form of an attribute's value, or None for what TF would not save either (a file, a dataset)."""
        if isinstance(value, _lockstep.Variable):
            return {"variable": self.variable(value, path)}
        if value is None or isinstance(value, (bool, int, float, str)):
            return {"value": value}
        if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            items = [self.value(item, f"{path}.{i}") for i, item in enumerate(value)]
            return None if None in items else {"list" if isinstance(value, list) else "tuple": items}
        if isinstance(value, dict):
            items = [(self.value(k, path), self.value(v, f"{path}.{k}")) for k, v in value.items()]
            return None if any(k is None or v is None for k, v in items) else {"dict": [list(i) for i in items]}
        if isinstance(value, _Module):
            return {"object": self.object(value, path)}
        return self._other(value, path)

    def _other(self, value, path):
        from . import dtypes
        from .data._structure import TensorSpec

        if isinstance(value, (_Tensor, _np.ndarray, _np.generic)):
            array = _array_entry(value)
            return None if array is None else {"array": array, "tensor": isinstance(value, _Tensor)}
        if isinstance(value, dtypes.DType):
            return {"dtype": value.name}
        if isinstance(value, _TensorShape):
            return {"shape": None if value.rank is None else list(value)}
        if isinstance(value, TensorSpec):
            return {"spec": _spec_entry(value)}
        owner = getattr(value, "__self__", None)
        if isinstance(owner, _Module) and hasattr(value, "__func__"):  # a method, or a tf.function one
            name = _class_attribute(type(owner), value.__func__) or value.__func__.__name__
            return {"method": [self.object(owner, path), name]}
        if inspect.isfunction(value) or inspect.isbuiltin(value) or isinstance(value, type) or \
                _is_tf_function(value):
            reference = _reference(value)
            # TF would have traced the function into its graph; lockstep keeps it by name, and says at its use
            # what it could not keep.
            return {"callable": reference} if reference else {"unsaved": f"{value!r}"}
        return None


def _spec_entry(spec):
    shape = spec.shape
    return {"shape": None if shape.rank is None else list(shape), "dtype": spec.dtype.name, "name": spec.name}


def _spec(entry):
    from .data._structure import TensorSpec

    return TensorSpec(entry["shape"], entry["dtype"], entry["name"])


# ---- signatures ----

def _signature_function(value, writer):
    """(target entry, parameter names, callable) of a signature function: a tf.function method of an object of the
    saved graph or one of its concrete functions (bound, or unbound as a class attribute), or an importable
    tf.function."""
    if not _is_tf_function(value):
        raise ValueError(f"Expected a TensorFlow function for which to generate a signature, but got {value!r}. "
                         "Only `tf.functions` with an input signature or concrete functions can be used as a "
                         "signature.")
    function = getattr(value, "__func__", value)
    owner = getattr(value, "__self__", None)
    if owner is None:
        owner = next((m for _, m in writer.modules if _class_attribute(type(m), function) is not None), None)
    if owner is not None:
        name = _class_attribute(type(owner), function)
        if name is None or id(owner) not in {id(m) for _, m in writer.modules}:
            raise ValueError(f"tf.saved_model.save: the signature function {value!r} is a method of an object that "
                             "is not part of the saved object; save an object that holds it")
        parameters = list(inspect.signature(function.python_function).parameters)[1:]
        return {"method": [writer.object(owner, ""), name]}, parameters, getattr(owner, name)
    reference = _reference(value)
    if reference is None:
        raise ValueError(f"tf.saved_model.save: the signature function {value!r} is neither a method of the saved "
                         "object nor importable by name; define it at the top level of a module")
    return {"callable": reference}, list(inspect.signature(value.python_function).parameters), value


def _class_attribute(cls, function):
    for klass in cls.__mro__:
        for name, attribute in vars(klass).items():
            if attribute is function:
                return name
    return None


def _signature_entry(value, writer, key):
    from .data._structure import TensorSpec

    target, parameters, bound = _signature_function(value, writer)
    # A concrete function's specs (get_concrete_function(spec)), else its tf.function's input_signature.
    specs = getattr(value, "function_spec", None) or getattr(getattr(value, "__func__", None), "function_spec", None)
    specs = [s if isinstance(s, TensorSpec) else None for s in specs or []]
    specs += [None] * (len(parameters) - len(specs))
    inputs = [getattr(spec, "name", None) or name for name, spec in zip(parameters, specs)]
    entry = {"target": target, "inputs": inputs, "specs": [None if s is None else _spec_entry(s) for s in specs],
             "outputs": None}
    if specs and None not in specs and len(specs) == len(parameters):
        entry["outputs"] = [_spec_entry(s) for s in _trace(bound, specs, writer, key)]
    return entry


def _trace(function, specs, writer, key):
    """The output specs of a signature function, from one call on zeros of its input specs (where TF traces it),
    the saved variables put back afterwards, as a trace leaves them. Outputs that are not tensors are TF's error."""
    from . import dtypes
    from .data._structure import TensorSpec

    if any(spec.dtype.as_numpy_dtype is None for spec in specs):
        return []
    saved = [(v, v.numpy()) for _, v in writer.variables]
    zeros = [_np.zeros([] if s.shape.rank is None else [1 if d is None else d for d in s.shape],
                       s.dtype.as_numpy_dtype) for s in specs]
    try:
        result = function(*[_lockstep.ops.convert_to_tensor(z, None, None) for z in zeros])
    finally:
        for variable, value in saved:
            variable.assign(value)
    items = result.items() if isinstance(result, dict) else enumerate(
        result if isinstance(result, (list, tuple)) else [result])
    outputs = []
    for name, item in items:
        name = str(name) if isinstance(result, dict) else f"output_{name}"
        if not isinstance(item, (_Tensor, _lockstep.Variable)):
            raise ValueError(f"Got a non-Tensor value {item!r} for key '{name}' in the output of the function "
                             f"{getattr(function, '__name__', function)!r} used to generate the SavedModel signature "
                             f"'{key}'. Outputs for functions used as signatures must be a single Tensor, a sequence "
                             "of Tensors, or a dictionary from string to Tensor.")
        outputs.append(TensorSpec(_traced_shape(item.shape, specs), dtypes.as_dtype(item.dtype), name))
    return outputs


def _traced_shape(shape, specs):
    """An output's shape as TF's trace would know it: unknown for inputs of unknown rank, and a 1 that may come
    from an unknown input dimension (traced as 1) left unknown."""
    if any(s.shape.rank is None for s in specs):
        return None
    unknown_dimension = any(None in list(s.shape) for s in specs)
    return [None if unknown_dimension and d == 1 else d for d in shape]


def _keras_signature(model):
    """Keras' serving signature: the model's call on its inputs, named inputs, inputs_1, ... as Keras 3 names
    them; the outputs' specs come from a call on zeros (Keras traces the call for them), batch size unknown."""
    from .data._structure import TensorSpec

    try:
        shapes = [tuple(t.shape) for t in model.inputs] if model.inputs else [tuple(model.input_shape)]
    except ValueError:  # not built: its input shape is not known yet
        shapes = []
    names = ["inputs"] + [f"inputs_{i}" for i in range(1, max(len(shapes), 1))]
    if not shapes:
        return {"target": {"keras_call": True}, "inputs": names, "specs": [None], "outputs": None}
    zeros = [_np.zeros([1 if d is None else d for d in shape], _np.float32) for shape in shapes]
    result = model(zeros[0] if len(zeros) == 1 else zeros, training=False)
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    outputs = [TensorSpec((None,) + tuple(t.shape)[1:], t.dtype, f"output_{i}") for i, t in enumerate(results)]
    return {"target": {"keras_call": True}, "inputs": names,
            "specs": [_spec_entry(TensorSpec(shape, "float32", n)) for shape, n in zip(shapes, names)],
            "outputs": [_spec_entry(spec) for spec in outputs]}


def _default_signatures(obj, writer):
    """TF's choice when save() is given no signatures: a Keras model's call, else the object's one tf.function
    with an input_signature (none when it has several)."""
    if _is_graph_model(obj):
        return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: _keras_signature(obj)}
    found = {name for klass in type(obj).__mro__ for name, a in vars(klass).items()
             if _is_tf_function(a) and getattr(a, "function_spec", None) is not None}
    valid = []
    for name in sorted(found):
        try:
            valid.append(_signature_entry(getattr(obj, name), writer, DEFAULT_SERVING_SIGNATURE_DEF_KEY))
        except ValueError:  # it returns no tensors: TF leaves it out of the choice
            pass
    return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: valid[0]} if len(valid) == 1 else {}


def _signature_entries(obj, signatures, writer):
    if signatures is None:
        return _default_signatures(obj, writer)
    if not isinstance(signatures, dict):
        signatures = {DEFAULT_SERVING_SIGNATURE_DEF_KEY: signatures}
    for key in signatures:
        if not isinstance(key, str):
            raise ValueError(f"Signature keys must be strings, got {key!r}: name each signature function")
    return {key: _signature_entry(value, writer, key) for key, value in signatures.items()}


# ---- save ----

def save(obj, export_dir, signatures=None, options=None):
    """Writes `obj` (a tf.Module: a Keras model, a module of variables and tf.function methods) to export_dir."""
    if not isinstance(obj, _Module):
        raise ValueError(f"Expected an object of type `Trackable`, such as `tf.Module` or a subclass of the "
                         f"`Trackable` class, for export. Got {obj!r} with type {type(obj)}.")
    if options is not None and not isinstance(options, SaveOptions):
        raise TypeError(f"options must be a tf.saved_model.SaveOptions, got {options!r}")
    options = options or SaveOptions()
    export_dir = _path(export_dir)
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise _errors.FailedPreconditionError(f"tf.saved_model.save: {export_dir} is a file; give a directory path")
    os.makedirs(os.path.join(export_dir, VARIABLES_DIRECTORY), exist_ok=True)
    os.makedirs(os.path.join(export_dir, ASSETS_DIRECTORY), exist_ok=True)
    writer = _Writer(export_dir)
    root = writer.object(obj, "")
    meta = {"format": _FORMAT, "version": _VERSION, "lockstep_version": _lockstep.__version__,
            "tags": sorted({SERVING, *(options.extra_tags or [])}), "root": root,
            "signatures": _signature_entries(obj, signatures, writer),
            "function_aliases": {alias: _signature_function(f, writer)[0]
                                 for alias, f in options.function_aliases.items()}}
    meta["objects"] = writer.objects
    meta["variables"] = [{"key": key, "shape": list(v._shape_tuple), "dtype": v.dtype.name, "trainable": v.trainable,
                          "name": v._name} for key, v in writer.variables]
    _checkpoint([(key, v) for key, v in writer.variables]).write(os.path.join(export_dir, VARIABLES_DIRECTORY,
                                                                               VARIABLES_FILENAME))
    # The metadata last, through a rename: a save that fails midway leaves no SavedModel that looks whole.
    path = os.path.join(export_dir, _METADATA)
    with open(path + ".tmp", "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(path + ".tmp", path)


def _checkpoint(variables):
    """lockstep's C++ checkpoint of the variables under their attribute paths."""
    train = _lockstep.train
    return train.Checkpoint([(key, train.variable_trackable(v)) for key, v in variables])


def _path(path):
    path = os.fspath(path)
    return path.decode() if isinstance(path, bytes) else path


# ---- load ----

def contains_saved_model(export_dir):
    """Whether export_dir holds a SavedModel: lockstep's, or TensorFlow's (which lockstep cannot load)."""
    export_dir = _path(export_dir)
    return any(os.path.isfile(os.path.join(export_dir, name))
               for name in (_METADATA, SAVED_MODEL_FILENAME_PB, SAVED_MODEL_FILENAME_PBTXT))


def _read_metadata(export_dir):
    path = os.path.join(export_dir, _METADATA)
    if not os.path.isfile(path):
        if any(os.path.isfile(os.path.join(export_dir, n)) for n in (SAVED_MODEL_FILENAME_PB,
                                                                     SAVED_MODEL_FILENAME_PBTXT)):
            raise NotImplementedError(
                f"loading {export_dir}, a SavedModel written by TensorFlow (graphs in saved_model.pb), is not "
                "implemented by lockstep (see docs/python.md): save the model with lockstep, or its weights")
        raise _errors.NotFoundError(f"SavedModel file does not exist at: {export_dir}/{{{_METADATA}|"
                                    f"{SAVED_MODEL_FILENAME_PB}}}: check the path (tf.saved_model.save writes it)")
    try:
        with open(path) as f:
            meta = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise _errors.DataLossError(f"{path} is corrupted ({e}); save the model again") from None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise _errors.DataLossError(f"{path} is not a lockstep SavedModel description; save the model again")
    if meta.get("version") != _VERSION:
        raise _errors.DataLossError(f"{path} has format version {meta.get('version')}, this lockstep reads version "
                                    f"{_VERSION}: save the model again with this lockstep")
    return meta


def _restore_variables(export_dir, meta):
    """New Variables of the saved shapes and dtypes, given their saved values."""
    from . import dtypes

    variables = [_lockstep.Variable(_np.zeros(e["shape"], dtypes.as_dtype(e["dtype"]).as_numpy_dtype),
                                    trainable=e["trainable"], name=e["name"], dtype=e["dtype"])
                 for e in meta["variables"]]
    prefix = os.path.join(export_dir, VARIABLES_DIRECTORY, VARIABLES_FILENAME)
    try:
        _checkpoint([(e["key"], v) for e, v in zip(meta["variables"], variables)]).read(prefix).assert_consumed()
    except ValueError as e:
        raise _errors.DataLossError(f"the variables of the SavedModel at {export_dir} do not match its description "
                                    f"({e}); save the model again") from None
    return variables


class _Unsaved:
    """Stands for a function lockstep could not save (a lambda, a nested function): using it says so."""

    def __init__(self, what, name):
        self._what, self._name = what, name

    def __call__(self, *args, **kwargs):
        raise ValueError(f"the loaded object's attribute '{self._name}' was {self._what}, which lockstep's SavedModel "
                         "keeps only by importable name; define it at the top level of a module and save again")


class _Reader:
    def __init__(self, export_dir, meta, variables):
        self._dir, self._meta, self._variables = export_dir, meta, variables
        self._objects = {}

    def object(self, index):
        if index in self._objects:
            return self._objects[index]
        entry = self._meta["objects"][index]
        if entry["kind"] == "keras":
            from .keras import models

            self._objects[index] = models.load_model(os.path.join(self._dir, entry["path"]))
            return self._objects[index]
        cls = _saved_class(entry["class"], self._dir)
        obj = cls.__new__(cls)
        self._objects[index] = obj  # before its attributes: they may lead back to it
        obj.__dict__.update({name: self.value(e, name) for name, e in entry["attributes"].items()})
        return obj

    def value(self, entry, name):
        kind, = entry
        data = entry[kind]
        if kind == "value":
            return data
        if kind in ("list", "tuple"):
            items = [self.value(e, name) for e in data]
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            return {self.value(k, name): self.value(v, name) for k, v in data}
        return self._other(kind, data, entry, name)

    def _other(self, kind, data, entry, name):
        from . import dtypes

        if kind == "variable":
            return self._variables[data]
        if kind == "object":
            return self.object(data)
        if kind == "array":
            array = _array(data)
            return _lockstep.ops.convert_to_tensor(array, None, None) if entry.get("tensor") else array
        if kind == "dtype":
            return dtypes.as_dtype(data)
        if kind == "shape":
            return _TensorShape(data)
        if kind == "spec":
            return _spec(data)
        if kind == "method":
            return getattr(self.object(data[0]), data[1])
        if kind == "callable":
            return _saved_callable(data, self._dir)
        if kind == "unsaved":
            return _Unsaved(data, name)
        raise _errors.DataLossError(f"the SavedModel at {self._dir} has an entry of unknown kind {kind!r}; save the "
                                    "model again with this lockstep")


def _saved_class(reference, export_dir):
    module, qualname = reference.split(":")
    try:
        return _resolve(module, qualname)
    except (ImportError, AttributeError):
        where = ("the program that saved it (its __main__)" if module == "__main__" else f"module {module}")
        raise ValueError(f"tf.saved_model.load({export_dir!r}): the saved object's class {qualname}, from {where}, "
                         f"cannot be found: define or import {qualname} (as {module}.{qualname}) before loading, "
                         "since lockstep recreates saved objects from their Python class") from None


def _saved_callable(reference, export_dir):
    module, qualname = reference.split(":")
    try:
        return _resolve(module, qualname)
    except (ImportError, AttributeError):
        raise ValueError(f"tf.saved_model.load({export_dir!r}): the saved function {module}.{qualname} cannot be "
                         f"found: define or import it before loading") from None


class _SignatureFunction:
    """A loaded signature: called with its inputs by name (or in order), it gives a dict of output tensors, the
    function's own dict or output_0, output_1, ... for a tensor or a sequence of them, as TF's signatures do."""

    def __init__(self, function, inputs, specs, outputs=None):
        self._function, self._inputs = function, list(inputs)
        self._specs = [None if s is None else _spec(s) for s in specs]
        self._outputs = None if outputs is None else {s["name"]: _spec(s) for s in outputs}

    @property
    def structured_input_signature(self):
        return (), dict(zip(self._inputs, self._specs))

    @property
    def structured_outputs(self):
        if self._outputs is None:
            raise NotImplementedError("structured_outputs of a signature before its first call is not implemented by "
                                      "lockstep (its functions are not traced): call the signature once first")
        return self._outputs

    def __call__(self, *args, **kwargs):
        if len(args) > len(self._inputs):
            raise TypeError(f"signature takes {len(self._inputs)} inputs ({', '.join(self._inputs)}), got "
                            f"{len(args)} positional arguments")
        given = dict(zip(self._inputs, args))
        for name, value in kwargs.items():
            if name not in self._inputs or name in given:
                raise TypeError(f"signature got an unexpected or repeated argument '{name}'; its inputs are "
                                f"{self._inputs}")
            given[name] = value
        missing = [n for n in self._inputs if n not in given]
        if missing:
            raise TypeError(f"signature is missing a required argument: {missing[0]!r}; its inputs are {self._inputs}")
        tensors = [_input(given[n], spec, n) for n, spec in zip(self._inputs, self._specs)]
        outputs = _outputs(self._function(*tensors))
        from .data._structure import TensorSpec

        if self._outputs is None:  # what TF's trace would have given, as far as one call shows it
            self._outputs = {k: TensorSpec(getattr(v, "shape", None), getattr(v, "dtype", "float32"), k)
                             for k, v in outputs.items()}
        return outputs


def _input(value, spec, name):
    from . import convert_to_tensor

    if spec is None:
        return convert_to_tensor(value)
    dtype = getattr(value, "dtype", None)
    if isinstance(value, (_Tensor, _lockstep.Variable)) and dtype != spec.dtype:
        raise _errors.InvalidArgumentError(f"signature input '{name}' was expected to be a {spec.dtype.name} tensor "
                                           f"but is a {dtype.name} tensor: cast it with tf.cast")
    return convert_to_tensor(value, dtype=spec.dtype)


def _outputs(result):
    from . import convert_to_tensor

    if isinstance(result, dict):
        return {str(k): convert_to_tensor(v) for k, v in result.items()}
    if result is None:
        raise ValueError("a signature function must return a tensor, a sequence or a dict of them; it returned None")
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    return {f"output_{i}": convert_to_tensor(v) for i, v in enumerate(items)}


class _SignatureMap(dict):
    """The loaded object's `signatures`: name -> signature function."""


def _signature(entry, reader, root):
    target = entry["target"]
    if "keras_call" in target:
        def function(*inputs):
            return root(inputs[0] if len(inputs) == 1 else list(inputs), training=False)
    else:
        function = reader.value(target, "signature")
    return _SignatureFunction(function, entry["inputs"], entry["specs"], entry.get("outputs"))


def load(export_dir, tags=None, options=None):
    """The object saved in export_dir by tf.saved_model.save: an instance of its class (found by name) with its
    attributes, submodules and variables as saved, its tf.function methods, and `signatures`."""
    if options is not None and not isinstance(options, LoadOptions):
        raise TypeError(f"options must be a tf.saved_model.LoadOptions, got {options!r}")
    export_dir = _path(export_dir)
    meta = _read_metadata(export_dir)
    if tags is not None and not set(_tags(tags)) <= set(meta["tags"]):
        raise ValueError(f"Got an incompatible argument to `tags`: {tags}. The SavedModel at {export_dir} has one "
                         f"MetaGraph with tags {meta['tags']}. You may omit the argument, pass 'None', or pass "
                         "matching tags.")
    reader = _Reader(export_dir, meta, _restore_variables(export_dir, meta))
    root = reader.object(meta["root"])
    root.__dict__["signatures"] = _SignatureMap(
        {key: _signature(entry, reader, root) for key, entry in meta["signatures"].items()})
    if options is not None and options.experimental_load_function_aliases:
        root.__dict__["function_aliases"] = {alias: reader.value(target, alias)
                                             for alias, target in meta["function_aliases"].items()}
    return root


experimental = types.ModuleType(f"{__name__}.experimental", "tf.saved_model.experimental: VariablePolicy.")
experimental.VariablePolicy = _VariablePolicy
_unimplemented.install(experimental.__dict__, "tf.saved_model.experimental")
_unimplemented.install(globals(), "tf.saved_model")
