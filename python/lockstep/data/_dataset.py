"""tf.data.Dataset over lockstep's C++ pipeline (lockstep::data::Dataset, bound as _lockstep.data.Dataset).

Every Dataset holds the C++ pipeline in `_cpp`: Keras' fit and the strategies consume it there, and only a
Python function given to map or filter runs Python (the C++ stage calls it with the GIL). The C++ elements are
tf.data's nests; `_structure` holds their TensorSpecs (see _structure.py). A map's output structure is learnt from
its first call, and asking for it before iterating runs the function on the first element, as TF's tracing does.
"""
import atexit
import os
import weakref

import numpy as _np

from .. import _lockstep, dtypes
from .._tensor import Tensor
from . import _structure
from ._options import Options
from ._structure import Structure, TensorSpec

_C = _lockstep.data
# Iterators still open at exit are stopped while their pipeline threads can still take the GIL (see data.cc).
atexit.register(_C.close_iterators)
AUTOTUNE = _C.AUTOTUNE
INFINITE_CARDINALITY = _C.INFINITE_CARDINALITY
UNKNOWN_CARDINALITY = _C.UNKNOWN_CARDINALITY


class _Lazy:
    """A Structure computed when first needed (or set by the first call of a map function)."""

    def __init__(self, compute=None, value=None):
        self.compute, self.value = compute, value

    def get(self):
        if self.value is None:
            self.value = self.compute()
        return self.value


def _int(value, name):
    if isinstance(value, Tensor) or hasattr(value, "_lockstep_tensor_"):
        value = value.numpy()
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, _np.integer)) and not (
            isinstance(value, _np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu"):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


def _call(fn, value):
    """Calls a tf.data function as TensorFlow does: a tuple element is unpacked into arguments."""
    return fn(*value) if type(value) is tuple else fn(value)


class Dataset:
    """A pipeline of elements, as tf.data.Dataset. Build one with from_tensor_slices, from_tensors, from_generator,
    range, zip, list_files, TFRecordDataset or TextLineDataset; every transformation returns a new Dataset."""

    def __init__(self, cpp, structure, options=None):
        self._cpp = cpp
        self._lazy = structure if isinstance(structure, _Lazy) else _Lazy(value=structure)
        self._opts = options if options is not None else Options()

    @property
    def _structure(self):
        return self._lazy.get()

    def _then(self, cpp, structure=None, options=None):
        """A dataset after this one: the same structure unless a function of this one's is given. While this
        one's structure is not known, the new one holds this one, which can learn it."""
        structure = structure or (lambda s: s)
        options = options if options is not None else self._opts
        if self._lazy.value is not None:
            return Dataset(cpp, structure(self._lazy.value), options)
        return Dataset(cpp, _Lazy(lambda: structure(self._structure)), options)

    @classmethod
    def _from_cpp(cls, cpp, like):
        """A Dataset over another C++ pipeline whose elements have the structure of `like`'s (e.g. one rewritten
        for distribution)."""
        return cls(cpp, like._structure, like._opts)  # learnt now: `like` may be gone when it is asked for

    def _keras_cpp(self):
        """The C++ pipeline for Keras (fit, evaluate, predict), whose C++ side reads Element{x, y, sample_weight}:
        elements must be a tensor, or a tuple (x,), (x, y) or (x, y, sample_weight) of numeric tensors."""
        s = self._structure
        if (s._single or s._flat_tuple and 1 <= len(s.specs) <= 3) and all(
                spec.dtype is not _structure.string for spec in s.specs):
            return self._cpp
        raise ValueError(f"Keras reads datasets of x, (x, y) or (x, y, sample_weight) tensors; this one's elements are "
                         f"{_structure._describe(s.tree)}: map them to such a tuple first")

    def _element_of(self, value):
        """The Python element (TF's nested structure) of a C++ element as the binding hands it over."""
        return self._structure.decode(value)

    # ---- sources ----
    @staticmethod
    def from_tensor_slices(tensors, name=None):
        leaves = _leaves_of(tensors, "from_tensor_slices")
        cpp = _C.Dataset.from_tensor_slices(_structure.pack_as(tensors, leaves))  # checks the lengths
        row = [TensorSpec(list(t.shape)[1:], t.dtype) for t in leaves]
        return Dataset(cpp, Structure(_structure.pack_as(tensors, row)))

    @staticmethod
    def from_tensors(tensors, name=None):
        leaves = _leaves_of(tensors, "from_tensors")
        cpp = _C.Dataset.from_tensors(_structure.pack_as(tensors, leaves))
        return Dataset(cpp, Structure(_structure.pack_as(tensors, [_structure.spec_of(t) for t in leaves])))

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None):
        """The elements a Python generator yields, pulled by the C++ pipeline (with the GIL) as it needs them."""
        if not callable(generator):
            raise TypeError(f"from_generator: generator must be callable, got {type(generator).__name__}")
        if output_signature is not None:
            if output_types is not None or output_shapes is not None:
                raise TypeError("from_generator: pass output_signature, or output_types (and output_shapes), not both")
            leaves = _structure.flatten(output_signature)
            if not leaves or not all(isinstance(s, TensorSpec) for s in leaves):
                raise TypeError("from_generator: output_signature must be a nest of tf.TensorSpec")
            declared = output_signature
        elif output_types is not None:
            types = _structure.flatten(output_types)
            shapes = ([None] * len(types) if output_shapes is None else
                      _structure.flatten_up_to(output_types, output_shapes))
            declared = _structure.pack_as(output_types, [TensorSpec(s, t) for t, s in zip(types, shapes)])
        else:
            raise TypeError("from_generator: pass output_signature (or output_types): lockstep needs the element "
                            "structure before running the generator")
        declared = Structure(declared)
        args = tuple(a.numpy() if hasattr(a, "numpy") else a for a in (args or ()))

        def make():
            def elements():
                for value in generator(*args):
                    if isinstance(value, list) and isinstance(declared.tree, tuple):
                        value = tuple(value)
                    yield declared.encode(value, "from_generator")

            return elements()

        return Dataset(_C.Dataset.from_generator(make), declared)

    @staticmethod
    def range(*args, output_type=dtypes.int64, name=None):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range takes 1 to 3 arguments (stop; start, stop; start, stop, step), got {len(args)}")
        values = [_int(a, "range's arguments") for a in args]
        start, stop, step = (0, values[0], 1) if len(values) == 1 else (values + [1])[:3]
        ds = Dataset(_C.Dataset.range(start, stop, step), Structure(TensorSpec([], dtypes.int64)))
        dtype = dtypes.as_dtype(output_type)
        if dtype == dtypes.int64:
            return ds
        from .. import _core

        return ds.map(lambda x: _core.cast(x, dtype))

    @staticmethod
    def counter(start=0, step=1, dtype=dtypes.int64, name=None):
        """start, start + step, ... without end (tf.data.Dataset.counter)."""
        start, step = _int(start, "counter's start"), _int(step, "counter's step")
        if step == 0:
            return Dataset.from_tensors(_np.array(start, dtypes.as_dtype(dtype).as_numpy_dtype)).repeat()
        return Dataset.range(start, 2**63 - 1 if step > 0 else -2**63, step, output_type=dtype)

    @staticmethod
    def zip(*args, datasets=None, name=None):
        if datasets is None:
            datasets = args[0] if len(args) == 1 else tuple(args)
        elif args:
            raise TypeError("zip: pass the datasets either as arguments or as datasets=, not both")
        inputs = _structure.flatten(datasets)
        if not inputs or not all(isinstance(d, Dataset) for d in inputs):
            raise TypeError("zip: pass datasets, or a tuple or dict of datasets")
        out = Structure(_structure.pack_as(datasets, [d._structure.tree for d in inputs]))
        # C++'s zip makes the tuple of the inputs' elements; a dict or deeper nest of datasets is packed here.
        combine = None if type(datasets) is tuple else lambda parts: _structure.pack_as(datasets, parts)
        return Dataset(_C.Dataset.zip([d._cpp for d in inputs], combine), out, inputs[0]._opts)

    # ---- transformations ----
    def map(self, map_func, num_parallel_calls=None, deterministic=None, synchronous=None,
            use_unbounded_threadpool=False, name=None):
        if not callable(map_func):
            raise TypeError(f"map: map_func must be callable, got {type(map_func).__name__}")
        cell = _Lazy()

        def call(value):
            out = _call(map_func, self._structure.decode(value))
            if isinstance(out, list):
                out = tuple(out)  # as TensorFlow, which warns
            if out is None:
                raise ValueError("map: the function returned None; return the transformed element")
            if cell.value is None:
                cell.value = Structure.of_value(out)
            return cell.value.encode(out)

        mapped = Dataset(self._cpp.map(call), cell, self._opts)
        cell.compute = _tracer(mapped, cell)
        return mapped

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        """The elements of the datasets map_func makes from this one's elements, block_length from each of
        cycle_length open datasets in turn (TF's order; cycle_length defaults to the CPU count, as TF's)."""
        if not callable(map_func):
            raise TypeError(f"interleave: map_func must be callable, got {type(map_func).__name__}")
        if cycle_length is None or cycle_length == AUTOTUNE:
            cycle_length = os.cpu_count() or 1
        block_length = 1 if block_length is None else _int(block_length, "interleave's block_length")
        cell = _Lazy()

        def call(value):
            made = _call(map_func, self._structure.decode(value))
            if not isinstance(made, Dataset):
                raise TypeError(f"interleave: the function must return a tf.data.Dataset, got {type(made).__name__}")
            if cell.value is None:
                cell.value = made._structure
            elif not _structure.same_nest(made.element_spec, cell.value.tree) or [
                    s.dtype for s in made._structure.specs] != [s.dtype for s in cell.value.specs]:
                raise TypeError(f"interleave: the function returned a dataset of {made.element_spec} after one of "
                                f"{cell.value.tree}; return datasets of one structure")
            return made._cpp

        out = Dataset(self._cpp.interleave(call, _int(cycle_length, "interleave's cycle_length"), block_length),
                      cell, self._opts)
        cell.compute = _tracer(out, cell)
        return out

    def flat_map(self, map_func, name=None):
        return self.interleave(map_func, cycle_length=1, block_length=1)

    def filter(self, predicate, name=None):
        if not callable(predicate):
            raise TypeError(f"filter: predicate must be callable, got {type(predicate).__name__}")

        def call(value):
            keep = _call(predicate, self._structure.decode(value))
            if isinstance(keep, (Tensor, _np.ndarray)) and tuple(keep.shape) != ():
                raise ValueError(f"filter: the predicate returned a tensor of shape {list(keep.shape)}; return a "
                                 "scalar bool")
            return bool(keep)

        return self._then(self._cpp.filter(call))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None):
        buffer_size = _int(buffer_size, "shuffle's buffer_size")
        if buffer_size == AUTOTUNE:
            raise ValueError("shuffle: buffer_size AUTOTUNE is not supported by lockstep; pass the number of elements")
        seed = None if seed is None else _int(seed, "shuffle's seed") & 0xFFFFFFFFFFFFFFFF
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return self._then(self._cpp.shuffle(buffer_size, seed, reshuffle))

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        batch_size = _int(batch_size, "batch's batch_size")
        drop = bool(drop_remainder)
        return self._then(self._cpp.batch(batch_size, drop), lambda s: s.batched(batch_size if drop else None))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False, name=None):
        """Batches elements of different shapes, each component padded to padded_shapes (None, or a None dim: the
        batch's largest) with padding_values (default 0, and "" for strings), as TF's."""
        batch_size = _int(batch_size, "padded_batch's batch_size")
        drop = bool(drop_remainder)
        structure = self._structure
        n = len(structure.specs)
        shapes = [None] * n if padded_shapes is None else _structure.flatten_up_to(structure.tree, padded_shapes)
        if padding_values is None:
            values = [None] * n
        elif _structure.is_structure(padding_values):
            values = _structure.flatten_up_to(structure.tree, padding_values)
        else:
            values = [padding_values] * n
        padding, out_specs = [], []
        for spec, shape, value, path in zip(structure.specs, shapes, values, _structure.paths(structure.tree)):
            dims = [None] * spec.shape.rank if shape is None else [
                None if d is None or int(d) < 0 else int(d) for d in
                (shape.as_list() if hasattr(shape, "as_list") else list(_np.asarray(shape).reshape(-1)))]
            if spec.shape.rank is not None and len(dims) != spec.shape.rank:
                raise ValueError(f"padded_batch: component {path} has rank {spec.shape.rank} but padded_shapes gives "
                                 f"{dims}; give one size (or None) per axis")
            if spec.dtype is _structure.string:
                if value is not None and bytes(_structure.to_leaf(value, spec, "padded_batch's padding_values")):
                    raise NotImplementedError("padded_batch: lockstep pads strings with \"\" only (see "
                                              "docs/python.md)")
                pad = 0.0
            else:
                pad = 0.0 if value is None else float(_np.asarray(value.numpy() if hasattr(value, "numpy") else value))
            padding.append(([-1 if d is None else d for d in dims], pad))
            out_specs.append(spec._with_shape([batch_size if drop else None] + dims))
        return self._then(self._cpp.padded_batch(batch_size, drop, padding), lambda s: s.with_specs(out_specs))

    def unbatch(self, name=None):
        def unbatched(s):
            if any(spec.shape.rank == 0 for spec in s.specs):
                raise ValueError("unbatch: a component is a scalar; unbatch needs rank >= 1 (batch the dataset first)")
            return s.unbatched()

        if self._lazy.value is not None:
            unbatched(self._lazy.value)
        return self._then(self._cpp.unbatch(), unbatched)

    def repeat(self, count=None, name=None):
        return self._then(self._cpp.repeat(-1 if count is None else _int(count, "repeat's count")))

    def take(self, count, name=None):
        return self._then(self._cpp.take(_int(count, "take's count")))

    def skip(self, count, name=None):
        return self._then(self._cpp.skip(_int(count, "skip's count")))

    def shard(self, num_shards, index, name=None):
        return self._then(self._cpp.shard(_int(num_shards, "shard's num_shards"), _int(index, "shard's index")))

    def cache(self, filename="", name=None):
        # lockstep caches in memory; a file cache gives the same elements but is not kept for the next run.
        return self._then(self._cpp.cache())

    def prefetch(self, buffer_size, name=None):
        return self._then(self._cpp.prefetch(_int(buffer_size, "prefetch's buffer_size")))

    def enumerate(self, start=0, name=None):
        return Dataset.zip((Dataset.range(_int(start, "enumerate's start"), 2**63 - 1), self))

    def concatenate(self, dataset, name=None):
        if not isinstance(dataset, Dataset):
            raise TypeError(f"concatenate: pass a tf.data.Dataset, got {type(dataset).__name__}")
        return Dataset(self._cpp.concatenate(dataset._cpp), _common_structure(self, dataset, "concatenate"),
                       self._opts)

    @staticmethod
    def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False,
                             rerandomize_each_iteration=None):
        """Each element from one of `datasets` drawn at random by `weights` (a list; uniform by default). The
        draws repeat for every iterator, as TF's default; rerandomize_each_iteration is not supported."""
        datasets = list(datasets)
        if not datasets or not all(isinstance(d, Dataset) for d in datasets):
            raise TypeError("sample_from_datasets: pass a non-empty list of tf.data.Dataset")
        if rerandomize_each_iteration:
            raise NotImplementedError("sample_from_datasets: rerandomize_each_iteration is not implemented by lockstep")
        if isinstance(weights, Dataset):
            raise NotImplementedError("sample_from_datasets: weights as a Dataset is not implemented by lockstep; "
                                      "pass a list of floats")
        w = [] if weights is None else [float(v) for v in _np.asarray(
            weights.numpy() if hasattr(weights, "numpy") else weights, dtype=float).reshape(-1)]
        structure = datasets[0]._structure
        for d in datasets[1:]:
            structure = _common_structure(Dataset(None, structure), d, "sample_from_datasets")
        seed = None if seed is None else _int(seed, "sample_from_datasets' seed") & 0xFFFFFFFFFFFFFFFF
        return Dataset(_C.Dataset.sample_from_datasets([d._cpp for d in datasets], w, seed,
                                                       bool(stop_on_empty_dataset)), structure, datasets[0]._opts)

    def scan(self, initial_state, scan_func, name=None):
        """scan_func(state, element) -> (new_state, output), from initial_state; the C++ stage holds the state
        and saves it with the iterator."""
        if not callable(scan_func):
            raise TypeError(f"scan: scan_func must be callable, got {type(scan_func).__name__}")
        state = Structure.of_value(initial_state)
        cell = _Lazy()

        def call(state_value, value):
            result = scan_func(state.decode(state_value), self._structure.decode(value))
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                raise TypeError("scan: the function must return a (new_state, output_element) pair")
            new_state, out = result
            out = tuple(out) if isinstance(out, list) else out
            if cell.value is None:
                cell.value = Structure.of_value(out)
            return state.encode(new_state, "scan()'s new state"), cell.value.encode(out, "scan()")

        out = Dataset(self._cpp.scan(state.encode(initial_state, "scan's initial_state"), call), cell, self._opts)
        cell.compute = _tracer(out, cell)
        return out

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        """The files matching a glob pattern (or list of them), a tf.string each; shuffled by default, as TF."""
        from ..io import gfile
        from ._readers import filenames_of

        patterns = filenames_of(file_pattern)
        files = sorted({f for p in patterns for f in gfile.glob(p)})
        if not files:
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError(f"list_files: no files match {', '.join(patterns)}; check the pattern")
        ds = Dataset.from_generator(lambda: iter(files), output_signature=TensorSpec([], dtypes.string))
        if shuffle is None or shuffle:
            ds = ds.shuffle(len(files), seed=seed)
        return ds

    def with_options(self, options, name=None):
        if not isinstance(options, Options):
            raise TypeError(f"with_options: pass a tf.data.Options, got {type(options).__name__}")
        merged = self._opts.merge(options)
        policy = merged.experimental_distribute.auto_shard_policy
        return self._then(self._cpp.with_options(policy.name), options=merged)

    def options(self):
        return self._opts

    def apply(self, transformation_func):
        return transformation_func(self)

    def reduce(self, initial_state, reduce_func, name=None):
        state = initial_state
        for element in self:
            state = reduce_func(state, element)
        return state

    # ---- what a dataset is ----
    @property
    def element_spec(self):
        return self._structure.tree

    def cardinality(self):
        from .. import _core

        return _core.constant(self._cpp.cardinality(), dtype=dtypes.int64)

    def __len__(self):
        n = self._cpp.cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self):
        return True

    def __iter__(self):
        return _Iterator(self)

    def as_numpy_iterator(self):
        return _NumpyIterator(self)

    def get_single_element(self, name=None):
        it = iter(self)
        try:
            element = next(it)
        except StopIteration:
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError("get_single_element: the dataset is empty; it must have exactly one element")
        try:
            next(it)
        except StopIteration:
            return element
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError("get_single_element: the dataset has more than one element; use take(1)")

    def __repr__(self):
        return f"<{type(self).__name__} element_spec={self.element_spec}>"


def _leaves_of(tensors, op):
    """The leaves of a nest given to from_tensor_slices or from_tensors as Tensors and StringTensors."""
    leaves = [_structure.to_leaf(_structure.normalized(v, f"{op}: component {n}"), where=f"{op}: component {n}")
              for v, n in zip(_structure.flatten(tensors), _structure.paths(tensors))]
    if not leaves:
        raise ValueError(f"{op}: the element structure is empty; pass at least one tensor")
    return leaves


def _common_structure(first, second, op):
    """The structure of a dataset of `first`'s and `second`'s elements (concatenate, sample_from_datasets): the
    same nest and dtypes, shapes relaxed where they differ."""
    mine, theirs = first._structure, second._structure
    if not _structure.same_nest(mine.tree, theirs.tree) or [s.dtype for s in mine.specs] != [
            s.dtype for s in theirs.specs]:
        raise TypeError(f"{op}: incompatible dataset elements: {mine.tree} and {theirs.tree}; give both "
                        "datasets the same structure and dtypes")
    specs = [s._with_shape(None if s.shape.rank != t.shape.rank else
                           [a if a == b else None for a, b in zip(s.shape, t.shape)])
             for s, t in zip(mine.specs, theirs.specs)]
    return mine.with_specs(specs)


def _tracer(dataset, cell):
    """What learns the structure of a map or zip output: computing its first element (TF traces the function).

    It holds the dataset weakly: the C++ stage holds the function, which holds the cell, and a strong reference
    back to the dataset would make a cycle through C++ that Python's collector cannot see. Every Dataset made from
    this one holds it (strongly) until its structure is known.
    """
    ref = weakref.ref(dataset)

    def trace():
        try:
            next(ref()._cpp.without_shuffles().make_iterator(0))
        except StopIteration:
            pass
        if cell.value is None:  # an empty input: no element, no structure to learn
            cell.value = Structure(TensorSpec(None, dtypes.float32))
        return cell.value

    return trace


class _Iterator:
    """An iterator over a Dataset (iter(dataset)), as TF's OwnedIterator: next() or get_next()."""

    def __init__(self, dataset):
        self._dataset = dataset
        self._it = dataset._cpp.make_iterator()

    def __iter__(self):
        return self

    def __next__(self):
        return self._dataset._element_of(next(self._it))

    def get_next(self):
        return next(self)

    def get_next_as_optional(self):
        from ._optional import next_as_optional

        return next_as_optional(self)

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def _lockstep_trackable(self):
        """Its position, for tf.train.Checkpoint(iterator=iter(dataset)): per worker, restored exactly."""
        return _lockstep.train.position_trackable(self._it.save_state, self._it.restore_state, False)


class _NumpyIterator(_Iterator):
    """as_numpy_iterator(): elements with NumPy leaves (bytes for strings)."""

    def __next__(self):
        return _structure.numpy_of(super().__next__())


# TensorFlow's Dataset methods that lockstep lacks say so when called.
_MISSING = ("window", "group_by_window", "bucket_by_sequence_length",
            "rejection_resample", "unique", "snapshot", "save", "load", "ragged_batch", "sparse_batch",
            "fingerprint", "random", "choose_from_datasets",
            "ignore_errors", "take_while", "distributed_save", "shuffle_and_repeat", "batch_with_padding")


def _missing(name):
    def method(*args, **kwargs):
        raise NotImplementedError(f"tf.data.Dataset.{name} is not implemented by lockstep (see docs/python.md)")

    method.__name__ = name
    return method


for _name in _MISSING:
    setattr(Dataset, _name, _missing(_name))
del _name
