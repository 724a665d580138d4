"""tf.GradientTape (over the C++ tape) and tf.function (the Python run eagerly, with TF's signatures and traces)."""
import contextlib
import functools
import inspect
import weakref

import numpy as _np

from . import _lockstep, _nest, dtypes as _dtypes, errors as _errors
from ._tensor import TensorShape

_ops = _lockstep.ops


class UnconnectedGradients:
    NONE = "none"
    ZERO = "zero"


def _unconnected(value):
    value = str(getattr(value, "value", value)).lower()
    if value not in (UnconnectedGradients.NONE, UnconnectedGradients.ZERO):
        raise ValueError(f"Unknown value for unconnected_gradients: {value!r}; use 'none' or 'zero' "
                         "(tf.UnconnectedGradients.NONE / ZERO)")
    return value


def _differentiable(t):
    """Only floating tensors carry gradients: TF gives None for integer, bool and string targets and sources."""
    dtype = getattr(t, "dtype", None)
    return isinstance(dtype, _dtypes.DType) and dtype.is_floating


def _zeros(shape, dtype):
    return _ops.fill(list(shape), 0, dtype._lockstep_dtype)


def _is_variable(x):
    return isinstance(x, _lockstep.Variable)


class GradientTape:
    """Records the ops run inside `with tf.GradientTape() as tape:` to differentiate them, as TensorFlow's does.

    The C++ tape is always persistent: jacobian takes one backward pass per target element, also on a plain tape
    (TF's pfor does it in one), so a plain tape is reset here after its one set of gradients instead."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._tape = _lockstep._GradientTape(True, watch_accessed_variables)
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._used = False
        self._recording = False
        self._watched = []  # the variables given to watch(), for watched_variables()

    def __enter__(self):
        self._tape._enter()
        self._recording = True
        return self

    def __exit__(self, *exc):
        self._tape._exit()
        self._recording = False
        return False

    def watch(self, tensor):
        for t in _nest.flatten(tensor):
            if not isinstance(t, (_lockstep.Tensor, _lockstep.Variable)):
                raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, not tf.Tensor or "
                                 "tf.Variable: convert it with tf.convert_to_tensor before watching it")
            self._tape._watch(t)
            if _is_variable(t) and not any(t is w for w in self._watched):
                self._watched.append(t)

    def watched_variables(self):
        if self._watch_accessed:
            # The C++ tape watches a variable's value when an op reads it and keeps no list of the variables.
            raise NotImplementedError("tf.GradientTape.watched_variables with watch_accessed_variables=True is not "
                                      "implemented by lockstep (see docs/python.md)")
        return tuple(self._watched)

    @contextlib.contextmanager
    def stop_recording(self):
        if not self._recording:
            raise ValueError("Tape.stop_recording() called on a tape that is not recording: call it inside "
                             "`with tape:`")
        self._tape._exit()
        self._recording = False
        try:
            yield
        finally:
            self._tape._enter()
            self._recording = True

    def reset(self):
        self._tape.reset()
        self._watched = []
        self._used = False

    def _start(self):
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of gradients "
                               "(or jacobians): create it with tf.GradientTape(persistent=True) to call it again")

    def _finish(self):
        self._used = True
        if not self._persistent:  # a plain tape releases what it held, as TF's does
            self._tape.reset()

    @contextlib.contextmanager
    def _recorded(self):
        """Ops run here are on this tape even after its `with` block: they join several targets into one."""
        if self._recording:
            yield
            return
        self._tape._enter()
        try:
            yield
        finally:
            self._tape._exit()

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=UnconnectedGradients.NONE):
        """The gradient of the sum of the targets (any nest) for each source, in the sources' structure."""
        if target is None:
            raise TypeError("Argument `target` should be a list or nested structure of Tensors or Variables to be "
                            "differentiated, but received None.")
        zeros = _unconnected(unconnected_gradients) == UnconnectedGradients.ZERO
        self._start()
        flat = _nest.flatten(sources)
        for s in flat:
            if s is None:
                raise TypeError("GradientTape.gradient: a source is None; pass Tensors or Variables only")
        targets = _nest.flatten(target)
        seeds = [] if output_gradients is None else _nest.flatten(output_gradients)
        seeds = (seeds + [None] * len(targets))[:len(targets)]  # TF takes missing ones as ones
        pairs = [(_ops.convert_to_tensor(t), g) for t, g in zip(targets, seeds) if _differentiable(t)]
        grads = [None] * len(flat)
        if pairs:
            total, seed = self._one_target(pairs)
            grads = self._tape._gradient(total, flat, seed)
        self._finish()
        grads = [g if _differentiable(s) else None for g, s in zip(grads, flat)]
        if zeros:
            grads = [_zeros(s.shape, s.dtype) if g is None else g for g, s in zip(grads, flat)]
        return _nest.pack_sequence_as(sources, grads)

    def _one_target(self, pairs):
        """(target, output gradient) for the C++ tape: the one pair, or the sum of target * seed over all."""
        if len(pairs) == 1:
            t, g = pairs[0]
            return t, None if g is None else _ops.convert_to_tensor(g, t.dtype._lockstep_dtype)
        with self._recorded():
            parts = [_ops.reduce_sum(t if g is None else _ops.multiply(t, _ops.stop_gradient(
                _ops.convert_to_tensor(g, t.dtype._lockstep_dtype))), None, False) for t, g in pairs]
            return _ops.add_n(parts), None

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE, parallel_iterations=None,
                 experimental_use_pfor=True):
        """d target[i...] / d source[j...] for each source: shape target.shape + source.shape, one backward pass
        per element of the target (so it stays differentiable by an outer tape)."""
        zeros = _unconnected(unconnected_gradients) == UnconnectedGradients.ZERO
        if not self._persistent and not experimental_use_pfor:
            raise RuntimeError("GradientTape must be created with persistent=True to compute the jacobian with "
                               "eager execution enabled and with experimental_use_pfor set to False.")
        self._start()
        flat = _nest.flatten(sources)
        target = _ops.convert_to_tensor(target)
        shape = list(target._shape_tuple)
        n = int(_np.prod(shape, dtype=_np.int64))
        rows = [[] for _ in flat]
        if _differentiable(target):
            for i in range(n):
                seed = _np.zeros(n, target.dtype.as_numpy_dtype)
                seed[i] = 1
                seed = _ops.convert_to_tensor(seed.reshape(shape), None, None)
                for row, g in zip(rows, self._tape._gradient(target, flat, seed)):
                    row.append(g)
        self._finish()
        out = [self._stacked(row, s, shape, zeros, n) for row, s in zip(rows, flat)]
        return _nest.pack_sequence_as(sources, out)

    @staticmethod
    def _stacked(row, source, target_shape, zeros, n):
        """The per-element gradients `row` of one source as one tensor of target_shape + source.shape."""
        s_shape = list(source._shape_tuple) if hasattr(source, "_shape_tuple") else list(source.shape)
        if not _differentiable(source) or all(g is None for g in row):
            return _zeros(target_shape + s_shape, source.dtype) if zeros else None
        row = [_zeros(s_shape, source.dtype) if g is None else g for g in row]
        return _ops.reshape(_ops.stack(row, 0), target_shape + s_shape) if n else _zeros(target_shape + s_shape,
                                                                                         source.dtype)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """d target[b, i...] / d source[b, j...]: shape [batch] + target.shape[1:] + source.shape[1:], one backward
        pass per element of a target row (the rows of a batch are independent)."""
        zeros = _unconnected(unconnected_gradients) == UnconnectedGradients.ZERO
        if not self._persistent and not experimental_use_pfor:
            raise RuntimeError("GradientTape must be created with persistent=True to compute the batch_jacobian "
                               "with eager execution enabled and with experimental_use_pfor set to False.")
        target = _ops.convert_to_tensor(target)
        t_shape, s_shape = list(target._shape_tuple), list(source.shape)
        if not t_shape or not s_shape:
            raise ValueError(f"batch_jacobian needs a target and a source of rank 1 or more (a batch dimension "
                             f"first); got shapes {t_shape} and {s_shape}")
        if t_shape[0] != s_shape[0]:
            raise ValueError(f"Need first dimension of target shape ({t_shape}) and source shape ({s_shape}) to "
                             "match.")
        self._start()
        batch, m = t_shape[0], int(_np.prod(t_shape[1:], dtype=_np.int64))
        row = []
        if _differentiable(target):
            for j in range(m):
                seed = _np.zeros((batch, m), target.dtype.as_numpy_dtype)
                seed[:, j] = 1
                row.append(self._tape._gradient(target, [source], _ops.convert_to_tensor(
                    seed.reshape(t_shape), None, None))[0])
        self._finish()
        out_shape = t_shape + s_shape[1:]
        if not _differentiable(source) or all(g is None for g in row):
            return _zeros(out_shape, source.dtype) if zeros else None
        row = [_zeros(s_shape, source.dtype) if g is None else g for g in row]
        if not m or not batch:
            return _zeros(out_shape, source.dtype)
        return _ops.reshape(_ops.stack(row, 1), out_shape)


# ---- tf.function ----

def _spec_of(value, name=None):
    from .data._structure import TensorSpec

    return TensorSpec(value.shape, value.dtype, name)


def _is_tensor_like(x):
    from .data._structure import StringTensor

    return isinstance(x, (_lockstep.Tensor, _lockstep.Variable, StringTensor))


def _is_spec(x):
    from .data._structure import TensorSpec

    return isinstance(x, TensorSpec)


def _same_structure(a, b):
    """True when nests a and b have the same lists, tuples and dict keys (leaves may differ)."""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b) and all(
            _same_structure(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(_same_structure(x, y) for x, y in zip(a, b)))
    return True


def _shape_fits(spec_shape, shape):
    """Whether `spec_shape` takes every tensor of `shape` (None there matches any dimension, or any rank)."""
    shape = TensorShape(shape)
    return spec_shape.rank is None or (shape.rank == spec_shape.rank and all(
        a is None or a == b for a, b in zip(spec_shape, shape)))


def _to_spec_value(value, spec, error, what):
    """`value` as a tensor that fits TensorSpec `spec` (Python values are converted to its dtype), else error."""
    from . import _core

    if _is_spec(value):  # get_concrete_function(TensorSpec) on a function with an input_signature
        if value.dtype != spec.dtype or not _shape_fits(spec.shape, value.shape):
            raise error(f"{what}: {value} does not fit the signature's {spec}")
        return value
    if not _is_tensor_like(value):
        try:
            value = _core.convert_to_tensor(value, dtype=spec.dtype)
        except (TypeError, ValueError, _errors.OpError) as e:
            raise error(f"{what}: {value!r} cannot be converted to {spec}: {e}") from None
    if value.dtype != spec.dtype or not _shape_fits(spec.shape, value.shape):
        raise error(f"{what}: got {_spec_of(value)} but the signature wants {spec}; pass a tensor of that dtype "
                    "and a compatible shape")
    return value


def _fit_signature(structure, value, error, what):
    """`value` (a nest) checked against `structure`, a nest of TensorSpecs and Python constants; tensors in it."""
    if _is_spec(structure):  # a list or array of numbers fits a spec as the tensor it converts to
        return _to_spec_value(value, structure, error, what)
    if isinstance(structure, dict):
        if not isinstance(value, dict) or sorted(value) != sorted(structure):
            raise error(f"{what}: {value!r} does not have the keys of the signature {structure!r}")
        return {k: _fit_signature(structure[k], value[k], error, what) for k in structure}
    if isinstance(structure, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(structure):
            raise error(f"{what}: {value!r} does not have the structure of the signature {structure!r}")
        return type(structure)(_fit_signature(s, v, error, what) for s, v in zip(structure, value))
    if _is_tensor_like(value) or not _equal_constants(structure, value):
        raise TypeError(f"{what}: got {value!r} but this function was traced for the Python value {structure!r}; "
                    "call the tf.function itself for other values")
    return value


def _equal_constants(a, b):
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 (objects whose == is not a bool: compared by identity, as TF's weakref key)
        return a is b


def _trace_key(value):
    """What TF traces a value as: tensors by dtype and shape, Python values by value, other objects by identity."""
    if _is_spec(value):
        return value
    if _is_tensor_like(value):
        return _spec_of(value)
    if isinstance(value, dict):
        return {k: _trace_key(value[k]) for k in value}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*[_trace_key(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_trace_key(v) for v in value)
    try:
        hash(value)
        return value
    except TypeError:
        return _Identity(value)


class _Identity:
    """An unhashable argument, traced by identity (TF keys such objects by weak reference)."""

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Identity) and other.value is self.value

    __hash__ = None


def _accepts(trace, key):
    """True when a call traced as `key` can run in the trace `trace` (its specs are at least as general)."""
    if not _same_structure(trace, key):
        return False
    for t, k in zip(_nest.flatten(trace), _nest.flatten(key)):
        if _is_spec(t) != _is_spec(k):
            return False
        if _is_spec(t):
            if t.dtype != k.dtype or not _shape_fits(t.shape, k.shape):
                return False
        elif not _equal_constants(t, k):
            return False
    return True


def _relaxed(trace, key):
    """`key` with the dims that differ from `trace` unknown (reduce_retracing's more general trace), or None when
    the two differ by more than shapes."""
    if not _same_structure(trace, key):
        return None
    out = []
    for t, k in zip(_nest.flatten(trace), _nest.flatten(key)):
        if _is_spec(t) and _is_spec(k) and t.dtype == k.dtype and t.shape.rank == k.shape.rank:
            out.append(k._with_shape([a if a == b else None for a, b in zip(t.shape, k.shape)]))
        elif _is_spec(t) == _is_spec(k) and (_is_spec(t) or _equal_constants(t, k)):
            out.append(k)
        else:
            return None
    return _nest.pack_sequence_as(key, out)


def _named(structure, names):
    """The top-level TensorSpecs of a signature named after their parameters, as TF's structured signatures are."""
    return tuple(type(s)(s.shape, s.dtype, n) if _is_spec(s) and s.name is None else s
                 for s, n in zip(structure, names))


def _placeholder(spec, unknown):
    """A tensor standing for `spec` (its unknown dims `unknown` long) to find a function's outputs."""
    from . import _core

    shape = [unknown if d is None else d for d in spec.shape]
    if spec.dtype is _dtypes.string:
        return _core.constant(_np.full(shape, b"", dtype=object).tolist() if shape else b"")
    return _ops.fill(shape, 0, spec.dtype._lockstep_dtype)


class Function:
    """What tf.function returns. lockstep runs the Python eagerly, every op a call into its C++ kernels, so a call
    computes what TensorFlow's traced graph would; the traces TF would make are counted (and their signatures
    kept, for get_concrete_function and saving) without running anything twice."""

    def __init__(self, python_function, input_signature=None, reduce_retracing=False, jit_compile=None,
                 autograph=True, instance=None, unbound=None):
        self._python_function = python_function
        self._input_signature = None if input_signature is None else _check_input_signature(input_signature)
        self._reduce_retracing = bool(reduce_retracing)
        self._jit_compile, self._autograph = jit_compile, autograph
        self._instance, self._unbound = instance, unbound
        self._traces = []  # ConcreteFunctions, in the order TF would trace them
        self._bound = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, python_function, updated=())  # not __dict__: f may be a whole model
        if not hasattr(self, "__name__"):
            self.__name__ = type(python_function).__name__
        if instance is not None:
            self.__self__, self.__func__ = instance, unbound

    python_function = property(lambda self: self._python_function)
    input_signature = property(lambda self: self._input_signature)
    # TF's FunctionSpec object; lockstep's saved_model reads the input signature from it.
    function_spec = property(lambda self: None if self._input_signature is None else list(self._input_signature))

    def __get__(self, instance, owner=None):
        """A tf.function method of a class, bound to one instance (one set of traces per instance, as TF)."""
        if instance is None or not hasattr(self._python_function, "__get__"):
            return self
        try:
            return self._bound[instance]
        except (KeyError, TypeError):
            pass
        bound = Function(self._python_function.__get__(instance, owner), self._input_signature,
                         self._reduce_retracing, self._jit_compile, self._autograph, instance, self)
        try:
            self._bound[instance] = bound
        except TypeError:  # not weakly referenceable or unhashable: a fresh binding each time
            pass
        return bound

    def _parameters(self):
        try:
            return [p for p in inspect.signature(self._python_function).parameters.values()]
        except (TypeError, ValueError):  # a builtin or C++ callable: no Python signature to bind to
            return None

    def _bind(self, args, kwargs, error=TypeError):
        """(trace key, arguments as the Python function gets them): with an input_signature, the arguments it
        covers checked against it and converted to tensors."""
        what = f"Binding inputs to tf.function {self.__name__!r} failed"
        params = self._parameters()
        if self._input_signature is None:
            if params is not None:
                try:
                    bound = inspect.Signature(params).bind(*args, **kwargs)
                except TypeError as e:
                    raise TypeError(f"{what}: {e}") from None
                bound.apply_defaults()
                return self._key_of(bound.arguments), args, kwargs
            return (_trace_key(tuple(args)), _trace_key(dict(kwargs))), args, kwargs
        covered = [p for p in (params or []) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        covered = covered[:len(self._input_signature)]
        try:
            bound = inspect.Signature(covered).bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{what} due to `{e}`; the input_signature is {self._input_signature}") from None
        values = [_fit_signature(spec, bound.arguments[p.name], error, f"{what} for argument {p.name!r}")
                  for spec, p in zip(self._input_signature, covered)]
        return None, values, {}

    def _key_of(self, arguments):
        return tuple((name, _trace_key(value)) for name, value in arguments.items())

    def _trace_for(self, key, args=None, kwargs=None):
        """The trace a call with trace key `key` runs in: an existing one that accepts it, else a new one."""
        if self._input_signature is not None:
            if not self._traces:
                names = [p.name for p in (self._parameters() or [])]
                self._traces.append(ConcreteFunction(self, (_named(self._input_signature, names), {})))
            return self._traces[0]
        for trace in self._traces:
            if _accepts(trace._key, key):
                return trace
        if self._reduce_retracing:
            for trace in reversed(self._traces):
                relaxed = _relaxed(trace._key, key)
                if relaxed is not None:
                    key = relaxed
                    break
        trace = ConcreteFunction(self, _structured(key), key)
        self._traces.append(trace)
        return trace

    def __call__(self, *args, **kwargs):
        key, args, kwargs = self._bind(args, kwargs)
        self._trace_for(key)
        return self._python_function(*args, **kwargs)

    def get_concrete_function(self, *args, **kwargs):
        """The trace for these arguments (TensorSpecs, tensors or Python values), made if TF would make it."""
        if self._input_signature is not None:
            if args or kwargs:
                self._bind(args, kwargs)
            return self._trace_for(None)
        key, _, _ = self._bind(args, kwargs)
        return self._trace_for(key)

    def experimental_get_tracing_count(self):
        return len(self._traces)

    def __repr__(self):
        return f"<lockstep tf.function {self.__name__!r}>"


def _structured(key):
    """TF's structured_input_signature, ((positional...), {}), from a trace key of (name, value) pairs."""
    return tuple(_named([v for _, v in key], [n for n, _ in key])), {}


class ConcreteFunction:
    """One trace of a tf.function: its input signature, callable with arguments that fit it. Its outputs are found
    by running the Python once on placeholder tensors, when first asked for (lockstep keeps no graph)."""

    def __init__(self, function, structured_input_signature, key=None):
        self._function = function
        self.structured_input_signature = structured_input_signature
        self._key = key
        self._outputs = None
        self.python_function = function.python_function
        self.__name__ = self.name = getattr(function, "__name__", "function")
        self.__module__ = getattr(function, "__module__", None)
        self.__qualname__ = getattr(function, "__qualname__", self.__name__)
        if function._instance is not None:
            self.__self__, self.__func__ = function._instance, function._unbound
        self.function_spec = list(structured_input_signature[0])

    @property
    def inputs(self):
        return [s for s in _nest.flatten(self.structured_input_signature) if _is_spec(s)]

    @property
    def structured_outputs(self):
        if self._outputs is None:
            self._outputs = self._find_outputs()
        return self._outputs

    @property
    def outputs(self):
        return [s for s in _nest.flatten(self.structured_outputs) if _is_spec(s)]

    def _find_outputs(self):
        """The outputs' TensorSpecs: a dim that changes between placeholder runs with unknown dims 1 and 2 long
        is unknown (None), as in TF's traced graph."""
        args, kwargs = self.structured_input_signature
        runs = []
        unknown = any(d is None for s in self.inputs for d in (s.shape if s.shape.rank is not None else [None]))
        for length in ((1, 2) if unknown else (1,)):
            fill = lambda x: _placeholder(x, length) if _is_spec(x) else x  # noqa: E731
            out = self.python_function(*[_nest.map_structure(fill, a) for a in args],
                                       **{k: _nest.map_structure(fill, v) for k, v in kwargs.items()})
            runs.append(out)
        if out is None:
            return None
        flats = [_nest.flatten(r) for r in runs]
        specs = []
        for i, leaf in enumerate(flats[0]):
            if not _is_tensor_like(leaf):
                specs.append(leaf)
                continue
            shape = list(leaf.shape)
            for other in flats[1:]:
                shape = [a if a == b else None for a, b in zip(shape, other[i].shape)]
            specs.append(_spec_of(leaf)._with_shape(shape))
        return _nest.pack_sequence_as(out, specs) if _nest.is_nested(out) else specs[0]

    def __call__(self, *args, **kwargs):
        """Runs the Python with arguments fitting this trace; Python constants it was traced with may be left
        out."""
        error = _errors.InvalidArgumentError
        what = f"Calling the concrete function {self.name!r}"
        spec_args, _ = self.structured_input_signature
        params = (self._function._parameters() or [])[:len(spec_args)]
        names = [p.name for p in params]
        values = dict(zip(names, args))
        if len(args) > len(spec_args):
            raise TypeError(f"{what}: it takes {len(spec_args)} arguments, got {len(args)}")
        for k, v in kwargs.items():
            if k not in names or k in values:
                raise TypeError(f"{what}: unexpected or repeated argument {k!r}; its arguments are {names}")
            values[k] = v
        positional, keywords = [], {}
        for param, spec in zip(params, spec_args):
            if param.name in values:
                value = _fit_signature(spec, values[param.name], error, f"{what} for argument {param.name!r}")
            elif not any(_is_spec(s) for s in _nest.flatten(spec)):
                value = spec  # a Python constant of the trace
            else:
                raise TypeError(f"{what}: missing the argument {param.name!r} ({spec})")
            if param.kind == param.VAR_POSITIONAL:
                positional.extend(value)
            elif param.kind == param.VAR_KEYWORD:
                keywords.update(value)
            elif param.kind == param.KEYWORD_ONLY:
                keywords[param.name] = value
            else:
                positional.append(value)
        return self.python_function(*positional, **keywords)

    def __repr__(self):
        return f"<ConcreteFunction {self.name}{self.structured_input_signature[0]}>"


def _check_input_signature(signature):
    if not isinstance(signature, (list, tuple)):
        raise TypeError(f"input_signature must be either a tuple or a list, got {type(signature)}.")
    bad = [s for s in _nest.flatten(list(signature)) if not _is_spec(s)]
    if bad:
        raise TypeError(f"input_signature must be a possibly nested sequence of TensorSpec objects, got invalid args "
                        f"{bad} with types {[type(b) for b in bad]}.")
    return tuple(signature)


def function(func=None, input_signature=None, autograph=True, jit_compile=None, reduce_retracing=False,
             experimental_implements=None, experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None, experimental_follow_type_hints=None):
    """tf.function: the Python runs as written (lockstep has no graph to compile), with input_signature checked
    and traces counted as TensorFlow's; jit_compile and autograph are accepted and change nothing."""
    retracing = bool(reduce_retracing or experimental_relax_shapes)
    if input_signature is not None:
        input_signature = _check_input_signature(input_signature)

    def decorate(f):
        if not callable(f):
            raise TypeError(f"tf.function wraps a callable, got {f!r}")
        return Function(f, input_signature, retracing, jit_compile if jit_compile is not None else experimental_compile,
                        autograph)

    return decorate if func is None else decorate(func)
