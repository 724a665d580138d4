"""tf.feature_column: TensorFlow's feature columns, turning a dict of raw features into the dense tensor a model
takes (through tf.keras.layers.DenseFeatures). Ids are worked out in NumPy with TF's hashes (FarmHash Fingerprint64,
FingerprintCat64 for crosses), so hashed, vocabulary and crossed ids equal TensorFlow's; numeric columns and
embeddings stay lockstep tensors, so GradientTape and fit differentiate through them."""
import collections as _collections
import math as _math
import os as _os

import numpy as _np

from . import _lockstep, _unimplemented, dtypes as _dtypes, errors as _errors
from ._sparse import SparseTensor as _SparseTensor
from ._tensor import Tensor as _Tensor
from .data._structure import StringTensor as _StringTensor
from .io import FixedLenFeature as _FixedLenFeature, VarLenFeature as _VarLenFeature
from .strings import fingerprint64 as _fingerprint64

_ops = _lockstep.ops
_M64 = (1 << 64) - 1
_DEFAULT_HASH_KEY = 0xDECAFCAFFE  # sparse_cross_hashed's default key, as TensorFlow's


# ---- raw features --------------------------------------------------------------------------------------------------

class _Ids(_collections.namedtuple("_Ids", ["indices", "values", "dense_shape"])):
    """Sparse ids (or raw categorical values) in NumPy: indices int64 [N, rank], values [N], dense_shape [rank]."""


def _raw(features, key):
    """features[key] as TensorFlow's transformation cache reads it: a SparseTensor (as _Ids) or a dense tensor, a
    rank-1 one expanded to [batch, 1]."""
    if not isinstance(features, dict):
        raise TypeError(f"features must be a dict of feature name to tensor, got {type(features).__name__}")
    if key not in features:
        raise ValueError(f"The feature {key!r} is not in the features dictionary (keys: {sorted(features)}); give "
                         "every key the feature columns name")
    value = features[key]
    if isinstance(value, _SparseTensor):
        values = value.values._values if isinstance(value.values, _StringTensor) else _np.asarray(value.values.numpy())
        return _Ids(_np.asarray(value.indices.numpy(), _np.int64), values, _np.asarray(value.dense_shape.numpy()))
    if isinstance(value, _StringTensor):
        array = value._values
    elif hasattr(value, "numpy"):
        array = _np.asarray(value.numpy())
    else:
        array = _np.asarray(value)
        if array.dtype.kind in "US":
            array = _np.vectorize(lambda s: s.encode() if isinstance(s, str) else bytes(s), otypes=[object])(array)
    if array.ndim == 0:
        raise ValueError(f"Feature (key: {key}) cannot have rank 0: give a batch of values, shape [batch] or "
                         "[batch, ...]")
    return array.reshape(-1, 1) if array.ndim == 1 else array


def _is_string(array):
    return array.dtype == object or array.dtype.kind in "US"


def _dense_to_ids(array, drop):
    """A dense feature as sparse values, the ignore value ('' for strings, -1 for integers) dropped if `drop`."""
    if drop:
        keep = array != (b"" if _is_string(array) else -1)
    else:
        keep = _np.ones(array.shape, bool)
    indices = _np.argwhere(keep).astype(_np.int64).reshape(-1, array.ndim)
    return _Ids(indices, array[keep], _np.asarray(array.shape, _np.int64))


def _categorical_input(features, key, dtype, drop=True):
    """features[key] as sparse values of a categorical column of dtype, checked to be strings or integers as it
    wants."""
    raw = _raw(features, key)
    ids = raw if isinstance(raw, _Ids) else _dense_to_ids(raw, drop)
    given = _is_string(ids.values) if ids.values.size or isinstance(raw, _Ids) else _is_string(raw)
    if dtype is not None and (dtype == _dtypes.string) != given:
        found = "string" if given else _np.asarray(ids.values).dtype.name
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: {key}, column dtype: "
                         f"{dtype.name}, tensor dtype: {found}; feed {dtype.name} values or change the column's dtype")
    if not given and ids.values.dtype.kind not in "iub":
        raise ValueError(f"feature {key!r} of a categorical column must be strings or integers, got "
                         f"{ids.values.dtype}; cast it (tf.cast) or use a numeric_column")
    return ids


def _check_ids(ids, num_buckets, what):
    if ids.values.size and (ids.values.min() < 0 or ids.values.max() >= num_buckets):
        bad = ids.values[(ids.values < 0) | (ids.values >= num_buckets)][0]
        raise _errors.InvalidArgumentError(f"{what}: id {bad} is not in [0, {num_buckets}); give ids in range or a "
                                           "default_value for the others")
    return ids


# ---- the column base classes ---------------------------------------------------------------------------------------

class _Column:
    """What every column has, as TensorFlow's: a name, and the parse spec of the raw features it reads."""

    @property
    def parse_example_spec(self):
        raise NotImplementedError

    def _parents(self):
        return []


class _DenseColumn(_Column):
    """A column giving a dense float tensor [batch, *variable_shape]."""

    def _dense(self, features, layer):
        raise NotImplementedError


class _CategoricalColumn(_Column):
    """A column giving sparse int64 ids in [0, num_buckets)."""

    def _ids(self, features):
        raise NotImplementedError


def _dtype(dtype):
    """A dtype argument; "string" too, as TensorFlow takes it."""
    return _dtypes.string if dtype in ("string", str) else _dtypes.as_dtype(dtype)


def _tuple_shape(shape, what):
    if shape is None:
        raise ValueError(f"{what}: shape must be given, e.g. (1,)")
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if not all(isinstance(d, (int, _np.integer)) and d > 0 for d in dims):
        raise ValueError(f"{what}: shape dimensions must be positive integers, got {shape!r}")
    return tuple(int(d) for d in dims)


# ---- numeric and bucketized ----------------------------------------------------------------------------------------

class NumericColumn(_DenseColumn, _collections.namedtuple(
        "NumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    """Real-valued features, float32 [batch, *shape] after normalizer_fn."""

    name = property(lambda self: self.key)
    variable_shape = property(lambda self: tuple(self.shape))

    @property
    def parse_example_spec(self):
        return {self.key: _FixedLenFeature(self.shape, self.dtype, self.default_value)}

    def _tensor(self, features):
        from . import _core

        raw = _raw(features, self.key)
        if isinstance(raw, _Ids):
            raise ValueError(f"The corresponding Tensor of numerical column must be a Tensor. SparseTensor is not "
                             f"supported. key: {self.key}; densify it with tf.sparse.to_dense")
        if raw.dtype.kind not in "biuf":
            raise ValueError(f"numeric_column {self.key!r} got {raw.dtype} values; feed numbers (parse strings with "
                             "tf.strings.to_number)")
        value = features[self.key]
        tensor = value if isinstance(value, _Tensor) else _core.convert_to_tensor(raw)
        if len(tensor.shape) == 1:
            tensor = _ops.reshape(tensor, [-1, 1])
        if self.normalizer_fn is not None:
            tensor = self.normalizer_fn(tensor)
        return _ops.cast(_core.convert_to_tensor(tensor), _dtypes.float32._lockstep_dtype)

    def _dense(self, features, layer):
        tensor = self._tensor(features)
        want = int(_np.prod(self.shape))
        if int(_np.prod(tensor.shape[1:])) != want:
            raise ValueError(f"numeric_column {self.key!r} has shape {self.shape} but its feature has shape "
                             f"{list(tensor.shape)}: give [batch, {', '.join(map(str, self.shape))}] values")
        return tensor


def numeric_column(key, shape=(1,), default_value=None, dtype=_dtypes.float32, normalizer_fn=None):
    """A NumericColumn of feature `key` with `shape` values per example."""
    if not isinstance(key, str):
        raise ValueError(f"key must be a string, got {key!r}")
    shape = _tuple_shape(shape, f"numeric_column {key!r}")
    dtype = _dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float, got {dtype!r} for numeric_column {key!r}")
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable, got {normalizer_fn!r}")
    if default_value is not None:
        default_value = _default_tuple(default_value, shape, dtype, key)
    return NumericColumn(key, shape, default_value, dtype, normalizer_fn)


def _default_tuple(value, shape, dtype, key):
    """A numeric column's default_value as TensorFlow keeps it: a number repeated to shape, or nested tuples."""
    kind = (int, float) if dtype.is_floating else (int,)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not isinstance(value, kind):
            raise TypeError(f"default_value must be compatible with dtype {dtype.name}, got {value!r} (key: {key})")
        array = _np.full(shape, value, dtype=object)
    else:
        array = _np.asarray(value, dtype=object)
        if array.shape != shape:
            raise ValueError(f"The shape of default_value must be equal to given shape {shape}, got "
                             f"{array.shape} (key: {key})")
        if not all(isinstance(v, kind) and not isinstance(v, bool) for v in array.reshape(-1)):
            raise TypeError(f"default_value must be compatible with dtype {dtype.name}, got {value!r} (key: {key})")

    def nest(a):
        return tuple(nest(x) for x in a) if isinstance(a, _np.ndarray) and a.ndim else a.item() if hasattr(
            a, "item") and not isinstance(a, (int, float)) else a
    return nest(array)


class BucketizedColumn(_DenseColumn, _CategoricalColumn, _collections.namedtuple(
        "BucketizedColumn", ["source_column", "boundaries"])):
    """A numeric column's values as bucket numbers: bucket i holds boundaries[i-1] <= x < boundaries[i]."""

    name = property(lambda self: f"{self.source_column.name}_bucketized")
    parse_example_spec = property(lambda self: self.source_column.parse_example_spec)
    variable_shape = property(lambda self: tuple(self.source_column.shape) + (len(self.boundaries) + 1,))
    num_buckets = property(lambda self: int(_np.prod(self.source_column.shape)) * (len(self.boundaries) + 1))

    def _parents(self):
        return [self.source_column]

    def _buckets(self, features):
        values = _np.asarray(self.source_column._tensor(features).numpy())
        return _np.searchsorted(_np.asarray(self.boundaries, _np.float64), values, side="right")

    def _dense(self, features, layer):
        from . import _core

        buckets = self._buckets(features)
        eye = _np.eye(len(self.boundaries) + 1, dtype=_np.float32)
        return _core.convert_to_tensor(eye[buckets])

    def _ids(self, features):
        # One id per source element: its bucket, offset by the element's position times the bucket count.
        buckets = self._buckets(features).reshape(-1, int(_np.prod(self.source_column.shape)))
        batch, width = buckets.shape
        ids = buckets + _np.arange(width) * (len(self.boundaries) + 1)
        indices = _np.stack(_np.meshgrid(_np.arange(batch), _np.arange(width), indexing="ij"), -1).reshape(-1, 2)
        return _Ids(indices.astype(_np.int64), ids.reshape(-1).astype(_np.int64), _np.array([batch, width]))


def bucketized_column(source_column, boundaries):
    """A BucketizedColumn of a numeric_column cut at the sorted `boundaries`."""
    if not isinstance(source_column, NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(), got {source_column!r}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional, got shape {source_column.shape}")
    if not isinstance(boundaries, (list, tuple)) or not boundaries:
        raise ValueError(f"boundaries must be a non-empty sorted list, got {boundaries!r}")
    if any(b >= a for b, a in zip(boundaries, boundaries[1:])) or any(
            b <= a for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError(f"boundaries must be a sorted list (strictly increasing), got {boundaries!r}")
    return BucketizedColumn(source_column, tuple(float(b) for b in boundaries))


# ---- categorical columns -------------------------------------------------------------------------------------------

def _categorical_key(key, what):
    if not isinstance(key, str) or not key:
        raise ValueError(f"{what}: key must be a non-empty string, got {key!r}")


def _categorical_dtype(dtype, what):
    dtype = _dtype(dtype)
    if dtype != _dtypes.string and not dtype.is_integer:
        raise ValueError(f"{what}: dtype must be string or integer, got {dtype!r}")
    return dtype


class HashedCategoricalColumn(_CategoricalColumn, _collections.namedtuple(
        "HashedCategoricalColumn", ["key", "hash_bucket_size", "dtype"])):
    """Ids Fingerprint64(value's text) % hash_bucket_size, as TensorFlow's."""

    name = property(lambda self: self.key)
    num_buckets = property(lambda self: self.hash_bucket_size)
    parse_example_spec = property(lambda self: {self.key: _VarLenFeature(self.dtype)})

    def _ids(self, features):
        raw = _categorical_input(features, self.key, self.dtype)
        texts = raw.values if self.dtype == _dtypes.string else [str(int(v)).encode() for v in raw.values]
        ids = _np.array([_fingerprint64(t) % self.hash_bucket_size for t in texts], _np.int64)
        return raw._replace(values=ids)


def categorical_column_with_hash_bucket(key, hash_bucket_size, dtype=_dtypes.string):
    """A HashedCategoricalColumn of string or integer feature `key`."""
    what = f"categorical_column_with_hash_bucket({key!r})"
    _categorical_key(key, what)
    if hash_bucket_size is None or int(hash_bucket_size) < 1:
        raise ValueError(f"hash_bucket_size must be at least 1, got {hash_bucket_size!r} ({what})")
    return HashedCategoricalColumn(key, int(hash_bucket_size), _categorical_dtype(dtype, what))


class _Vocabulary:
    """Lookup of a vocabulary column: the value's position, else vocabulary size + Fingerprint64(text) %
    num_oov_buckets (TF's table), else default_value (-1, an id embedding and indicator columns skip)."""

    def _lookup(self, features, vocabulary):
        raw = _categorical_input(features, self.key, self.dtype)
        table = {v: i for i, v in enumerate(vocabulary)}
        n, oov, default = len(vocabulary), self.num_oov_buckets, self.default_value

        def one(v):
            v = v if isinstance(v, bytes) else int(v)
            if v in table:
                return table[v]
            if oov:
                return n + _fingerprint64(v if isinstance(v, bytes) else str(v).encode()) % oov
            return default
        return raw._replace(values=_np.array([one(v) for v in raw.values], _np.int64))


class VocabularyListCategoricalColumn(_Vocabulary, _CategoricalColumn, _collections.namedtuple(
        "VocabularyListCategoricalColumn", ["key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets"])):
    """Ids of values in an in-memory vocabulary."""

    name = property(lambda self: self.key)
    num_buckets = property(lambda self: len(self.vocabulary_list) + self.num_oov_buckets)
    parse_example_spec = property(lambda self: {self.key: _VarLenFeature(self.dtype)})

    def _ids(self, features):
        vocabulary = [v.encode() if isinstance(v, str) else v for v in self.vocabulary_list]
        return self._lookup(features, vocabulary)


def _oov_and_default(num_oov_buckets, default_value, what):
    if num_oov_buckets is None or int(num_oov_buckets) < 0:
        raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets!r} in {what}: give 0 or more")
    if int(num_oov_buckets) and default_value not in (None, -1):
        raise ValueError(f"Can't specify both num_oov_buckets and default_value in {what}: values outside the "
                         "vocabulary get either a hash bucket or the default")
    return int(num_oov_buckets), -1 if default_value is None else int(default_value)


def categorical_column_with_vocabulary_list(key, vocabulary_list, dtype=None, default_value=-1, num_oov_buckets=0):
    """A VocabularyListCategoricalColumn: value vocabulary_list[i] has id i."""
    what = f"categorical_column_with_vocabulary_list({key!r})"
    _categorical_key(key, what)
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list!r} must be non-empty, column_name: {key}")
    vocabulary = tuple(v.decode() if isinstance(v, bytes) else v for v in vocabulary_list)
    if len(set(vocabulary)) != len(vocabulary):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list!r}, column_name: {key}")
    strings = all(isinstance(v, str) for v in vocabulary)
    if not strings and not all(isinstance(v, (int, _np.integer)) and not isinstance(v, bool) for v in vocabulary):
        raise ValueError(f"vocabulary_list must be all strings or all integers, got {vocabulary_list!r} ({what})")
    vocab_dtype = _dtypes.string if strings else _dtypes.int64
    if dtype is None:
        dtype = vocab_dtype
    dtype = _categorical_dtype(dtype, what)
    if (dtype == _dtypes.string) != strings:
        raise ValueError(f"dtype {dtype!r} does not match vocabulary_list {vocabulary_list!r} ({what})")
    oov, default = _oov_and_default(num_oov_buckets, default_value, what)
    vocabulary = vocabulary if strings else tuple(int(v) for v in vocabulary)
    return VocabularyListCategoricalColumn(key, vocabulary, dtype, default, oov)


class VocabularyFileCategoricalColumn(_Vocabulary, _CategoricalColumn, _collections.namedtuple(
        "VocabularyFileCategoricalColumn",
        ["key", "vocabulary_file", "vocabulary_size", "num_oov_buckets", "dtype", "default_value", "file_format"])):
    """Ids of values in a vocabulary file, one value per line: line i has id i."""

    name = property(lambda self: self.key)
    num_buckets = property(lambda self: self.vocabulary_size + self.num_oov_buckets)
    parse_example_spec = property(lambda self: {self.key: _VarLenFeature(self.dtype)})

    def _ids(self, features):
        lines = _vocabulary_lines(self.vocabulary_file)[:self.vocabulary_size]
        vocabulary = lines if self.dtype == _dtypes.string else [int(v) for v in lines]
        return self._lookup(features, vocabulary)


def _vocabulary_lines(path):
    with open(path, "rb") as f:
        return [line.rstrip(b"\r\n") for line in f]


def categorical_column_with_vocabulary_file(key, vocabulary_file, vocabulary_size=None, dtype=_dtypes.string,
                                            default_value=None, num_oov_buckets=0, file_format=None):
    """A VocabularyFileCategoricalColumn over the first vocabulary_size lines (all if None) of vocabulary_file."""
    what = f"categorical_column_with_vocabulary_file({key!r})"
    _categorical_key(key, what)
    if file_format is not None:
        raise NotImplementedError(f"tf.feature_column.categorical_column_with_vocabulary_file with "
                                  f"file_format={file_format!r} is not implemented by lockstep (see docs/python.md)")
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {what}")
    if not _os.path.exists(vocabulary_file):
        raise ValueError(f"vocabulary_file {vocabulary_file!r} does not exist ({what})")
    lines = _vocabulary_lines(vocabulary_file)
    if vocabulary_size is None:
        vocabulary_size = len(lines)
    elif int(vocabulary_size) < 1 or int(vocabulary_size) > len(lines):
        raise ValueError(f"Invalid vocabulary_size {vocabulary_size} in {what}: the file has {len(lines)} lines")
    dtype = _categorical_dtype(dtype, what)
    if dtype.is_integer:
        try:
            [int(v) for v in lines[:int(vocabulary_size)]]
        except ValueError:
            raise ValueError(f"vocabulary_file {vocabulary_file!r} holds lines that are not integers but dtype is "
                             f"{dtype.name} ({what})") from None
    oov, default = _oov_and_default(num_oov_buckets, default_value, what)
    return VocabularyFileCategoricalColumn(key, vocabulary_file, int(vocabulary_size), oov, dtype, default, None)


class IdentityCategoricalColumn(_CategoricalColumn, _collections.namedtuple(
        "IdentityCategoricalColumn", ["key", "number_buckets", "default_value"])):
    """Integer features used as their own ids in [0, num_buckets)."""

    name = property(lambda self: self.key)
    num_buckets = property(lambda self: self.number_buckets)
    parse_example_spec = property(lambda self: {self.key: _VarLenFeature(_dtypes.int64)})

    def _ids(self, features):
        raw = _categorical_input(features, self.key, _dtypes.int64)
        values = raw.values.astype(_np.int64)
        if self.default_value is not None:
            values = _np.where((values < 0) | (values >= self.number_buckets), self.default_value, values)
        return _check_ids(raw._replace(values=values), self.number_buckets,
                          f"categorical_column_with_identity({self.key!r})")


def categorical_column_with_identity(key, num_buckets, default_value=None):
    """An IdentityCategoricalColumn; values outside [0, num_buckets) get default_value, or are an error if None."""
    what = f"categorical_column_with_identity({key!r})"
    _categorical_key(key, what)
    if num_buckets is None or int(num_buckets) < 1:
        raise ValueError(f"num_buckets {num_buckets!r} < 1, column_name {key}")
    if default_value is not None and not 0 <= int(default_value) < int(num_buckets):
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), column_name {key}")
    return IdentityCategoricalColumn(key, int(num_buckets), None if default_value is None else int(default_value))


# ---- crossed -------------------------------------------------------------------------------------------------------

def _shift_mix(v):
    return v ^ (v >> 47)


def _fingerprint_cat64(fp1, fp2):
    """TensorFlow's FingerprintCat64: two 64-bit fingerprints combined into one."""
    mul = 0xC6A4A7935BD1E995
    result = fp1 ^ mul
    result ^= (_shift_mix((fp2 * mul) & _M64) * mul) & _M64
    result = (result * mul) & _M64
    result = (_shift_mix(result) * mul) & _M64
    return _shift_mix(result)


def _rows(ids):
    """The values of each batch row of sparse values, in index order."""
    batch = int(ids.dense_shape[0])
    order = _np.lexsort(ids.indices.T[::-1]) if len(ids.indices) else _np.zeros(0, _np.int64)
    rows = [[] for _ in range(batch)]
    for i in order:
        rows[int(ids.indices[i, 0])].append(ids.values[i])
    return rows


class CrossedColumn(_CategoricalColumn, _collections.namedtuple(
        "CrossedColumn", ["keys", "hash_bucket_size", "hash_key"])):
    """Each combination of its keys' values in a row, hashed to one of hash_bucket_size ids as TF's
    sparse_cross_hashed: FingerprintCat64 over the values' fingerprints (a string's Fingerprint64, an id as it
    is)."""

    name = property(lambda self: "_X_".join(sorted(k if isinstance(k, str) else k.name for k in self._leaves())))
    num_buckets = property(lambda self: self.hash_bucket_size)

    @property
    def parse_example_spec(self):
        spec = {}
        for key in self.keys:
            spec.update({key: _VarLenFeature(_dtypes.string)} if isinstance(key, str) else key.parse_example_spec)
        return spec

    def _parents(self):
        return [k for k in self.keys if not isinstance(k, str)]

    def _leaves(self):
        for key in self.keys:
            yield from key._leaves() if isinstance(key, CrossedColumn) else [key]

    def _ids(self, features):
        sparse, dense = [], []
        for key in self._leaves():
            if isinstance(key, str):  # a raw feature: every value of a dense one crosses, '' and -1 too, as TF's
                raw = _raw(features, key)
                (sparse if isinstance(raw, _Ids) else dense).append(
                    raw if isinstance(raw, _Ids) else _dense_to_ids(raw, drop=False))
            else:
                sparse.append(key._ids(features))
        inputs = sparse + dense  # TF's sparse_cross takes the sparse inputs first, then the dense ones
        batches = {int(i.dense_shape[0]) for i in inputs}
        if len(batches) != 1:
            raise _errors.InvalidArgumentError(f"crossed_column {self.name!r}: its features have different batch "
                                               f"sizes {sorted(batches)}; give them one batch size")
        key = _DEFAULT_HASH_KEY if self.hash_key is None else int(self.hash_key) & _M64
        hashed = [[[_fingerprint64(v) if isinstance(v, bytes) else int(v) & _M64 for v in row] for row in _rows(i)]
                  for i in inputs]
        indices, values = [], []
        for b in range(batches.pop()):
            crosses = [key]
            for column in hashed:  # the first input varies slowest, as TF's product order
                crosses = [_fingerprint_cat64(c, h) for c in crosses for h in column[b]]
            indices += [(b, j) for j in range(len(crosses))]
            values += [c % self.hash_bucket_size for c in crosses]
        width = max([j + 1 for _, j in indices], default=0)
        return _Ids(_np.asarray(indices, _np.int64).reshape(-1, 2), _np.asarray(values, _np.int64),
                    _np.array([len(hashed[0]), width], _np.int64))


def crossed_column(keys, hash_bucket_size, hash_key=None):
    """A CrossedColumn of two or more raw feature names or categorical columns (not hashed ones)."""
    if not isinstance(keys, (list, tuple)) or len(keys) < 2:
        raise ValueError(f"keys must be a list with length > 1, given: {keys!r}")
    if hash_bucket_size is None or int(hash_bucket_size) < 1:
        raise ValueError(f"hash_bucket_size must be > 1, given: {hash_bucket_size!r}")
    for key in keys:
        if isinstance(key, HashedCategoricalColumn):
            raise ValueError(f"categorical_column_with_hash_bucket is not supported for crossing: hashing before "
                             f"crossing increases the chance of collision; cross the raw key {key.key!r} instead")
        if not isinstance(key, (str, _CategoricalColumn)):
            raise ValueError(f"Unsupported key type. All keys must be either string, or categorical column except "
                             f"HashedCategoricalColumn. Given: {key!r}")
    return CrossedColumn(tuple(keys), int(hash_bucket_size), hash_key)


# ---- dense views of categorical columns ----------------------------------------------------------------------------

class IndicatorColumn(_DenseColumn, _collections.namedtuple("IndicatorColumn", ["categorical_column"])):
    """A categorical column as multi-hot counts [batch, num_buckets]; ids below zero count nowhere."""

    name = property(lambda self: f"{self.categorical_column.name}_indicator")
    parse_example_spec = property(lambda self: self.categorical_column.parse_example_spec)
    # (1, num_buckets) as TF's, though the dense tensor is [batch, num_buckets].
    variable_shape = property(lambda self: (1, self.categorical_column.num_buckets))

    def _parents(self):
        return [self.categorical_column]

    def _dense(self, features, layer):
        from . import _core

        ids = self.categorical_column._ids(features)
        n = self.categorical_column.num_buckets
        rows = tuple(int(d) for d in ids.dense_shape[:-1])
        out = _np.zeros(rows + (n,), _np.float32)
        keep = (ids.values >= 0) & (ids.values < n)
        _np.add.at(out, tuple(ids.indices[keep, :-1].T) + (ids.values[keep],), 1.0)
        return _core.convert_to_tensor(out)


def indicator_column(categorical_column):
    """An IndicatorColumn of a categorical column."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"Unsupported input type. Input must be a CategoricalColumn. Given: {categorical_column!r}")
    return IndicatorColumn(categorical_column)


_COMBINERS = ("mean", "sqrtn", "sum")


class EmbeddingColumn(_DenseColumn, _collections.namedtuple("EmbeddingColumn", [
        "categorical_column", "dimension", "combiner", "initializer", "ckpt_to_load_from", "tensor_name_in_ckpt",
        "max_norm", "trainable", "use_safe_embedding_lookup"])):
    """A categorical column's ids looked up in a trainable [num_buckets, dimension] table (a weight of the
    DenseFeatures layer) and combined per row: mean, sqrtn or sum; a row without ids gives zeros."""

    name = property(lambda self: f"{self.categorical_column.name}_embedding")
    parse_example_spec = property(lambda self: self.categorical_column.parse_example_spec)
    variable_shape = property(lambda self: (self.dimension,))

    def _parents(self):
        return [self.categorical_column]

    def _initial_value(self):
        from . import random

        shape = [self.categorical_column.num_buckets, self.dimension]
        if self.initializer is None:
            return random.truncated_normal(shape, mean=0.0, stddev=1 / _math.sqrt(self.dimension))
        return self.initializer(shape, dtype=_dtypes.float32)

    def _dense(self, features, layer):
        from . import _core

        table = layer._embedding(self)
        ids = self.categorical_column._ids(features)
        ids = _check_ids(ids._replace(indices=ids.indices[ids.values >= 0], values=ids.values[ids.values >= 0]),
                         self.categorical_column.num_buckets, f"embedding_column {self.name!r}")
        rows_shape = tuple(int(d) for d in ids.dense_shape[:-1])
        rows = _np.ravel_multi_index(tuple(ids.indices[:, :-1].T), rows_shape) if len(ids.values) else \
            _np.zeros(0, _np.int64)
        count = _np.bincount(rows, minlength=int(_np.prod(rows_shape)))[rows].astype(_np.float32)
        scale = {"sum": _np.ones_like(count), "mean": 1 / _np.maximum(count, 1),
                 "sqrtn": 1 / _np.sqrt(_np.maximum(count, 1))}[self.combiner]
        # A [rows, nnz] matrix of each id's weight in its row, times the looked-up vectors: a differentiable
        # segment sum.
        weights = _np.zeros((int(_np.prod(rows_shape)), max(len(rows), 1)), _np.float32)
        weights[rows, _np.arange(len(rows))] = scale
        vectors = _ops.gather(table, _np.append(ids.values, 0) if not len(rows) else ids.values)
        out = _ops.matmul(_core.convert_to_tensor(weights), vectors, False, False)
        return _ops.reshape(out, list(rows_shape) + [self.dimension])


def embedding_column(categorical_column, dimension, combiner="mean", initializer=None, ckpt_to_load_from=None,
                     tensor_name_in_ckpt=None, max_norm=None, trainable=True, use_safe_embedding_lookup=True):
    """An EmbeddingColumn of a categorical column, `dimension` values per row."""
    if not isinstance(categorical_column, _CategoricalColumn):
        raise ValueError(f"categorical_column must be a CategoricalColumn, given: {categorical_column!r}")
    if dimension is None or int(dimension) < 1:
        raise ValueError(f"Invalid dimension {dimension!r}: give a positive number of embedding values")
    if combiner not in _COMBINERS:
        raise ValueError(f"combiner must be one of {list(_COMBINERS)}, given: {combiner!r}")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. Embedding of column_name: "
                         f"{categorical_column.name}")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or none of them.")
    for arg, value in (("ckpt_to_load_from", ckpt_to_load_from), ("max_norm", max_norm)):
        if value is not None:
            raise NotImplementedError(f"tf.feature_column.embedding_column with {arg}={value!r} is not implemented "
                                      "by lockstep (see docs/python.md)")
    return EmbeddingColumn(categorical_column, int(dimension), combiner, initializer, None, None, None,
                           bool(trainable), bool(use_safe_embedding_lookup))


# ---- what several columns share ------------------------------------------------------------------------------------

def make_parse_example_spec(feature_columns):
    """The tf.io parse spec (key -> FixedLenFeature / VarLenFeature) of the raw features the columns read."""
    spec = {}
    for column in feature_columns:
        if not isinstance(column, _Column):
            raise ValueError(f"All feature_columns must be FeatureColumn instances. Given: {column!r}")
        for key, feature in column.parse_example_spec.items():
            if key in spec and spec[key] != feature:
                raise ValueError(f"feature_columns contain different parse_spec for key {key}. Given {spec[key]} "
                                 f"and {feature}")
            spec[key] = feature
    return spec


def dense_columns(feature_columns):
    """The columns as DenseFeatures takes them: a non-empty list of dense columns, sorted by name as TF's."""
    if isinstance(feature_columns, _Column):
        feature_columns = [feature_columns]
    columns = list(feature_columns or [])
    if not columns:
        raise ValueError("feature_columns must not be empty.")
    for column in columns:
        if not isinstance(column, _DenseColumn) or isinstance(column, _CategoricalColumn) and not isinstance(
                column, BucketizedColumn):
            raise ValueError(f"Items of feature_columns must be a DenseColumn. You can wrap a categorical column "
                             f"with an embedding_column or indicator_column. Given: {column!r}")
    names = [c.name for c in columns]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"Duplicate feature column name found for columns: {duplicates}; give each column once")
    return sorted(columns, key=lambda c: c.name)


def dense_tensor(column, features, layer):
    """The column's dense tensor, [batch, prod(variable_shape)]."""
    return _ops.reshape(column._dense(features, layer), [-1, int(_np.prod(column.variable_shape))])


_unimplemented.install(globals(), "tf.feature_column")
