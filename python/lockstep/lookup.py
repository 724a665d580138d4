"""tf.lookup: hash tables from keys to values (string or integer keys), filled from tensors or text files, with
TensorFlow's out-of-vocabulary buckets (Fingerprint64 of the key's text, as tf.strings.to_hash_bucket_fast). Tables
are Python dicts; lookup maps a tensor's keys in NumPy."""
import numpy as _np

from . import _unimplemented, dtypes as _dtypes, errors as _errors
from .data._structure import StringTensor as _StringTensor


def _keys_array(keys):
    """Keys (a string or numeric tensor, or a Python list) as (a flat list of bytes or ints, shape, dtype)."""
    from . import _core

    t = keys if isinstance(keys, _StringTensor) else _core.convert_to_tensor(keys)
    if isinstance(t, _StringTensor):
        values = t._values
        return list(values.reshape(-1)), values.shape, _dtypes.string
    array = _np.asarray(t.numpy())
    return [v.item() for v in array.reshape(-1)], array.shape, t.dtype


def _tensor(values, shape, dtype):
    """A flat list of values as a tensor of dtype and shape."""
    if dtype == _dtypes.string:
        array = _np.empty(len(values), dtype=object)
        array[:] = [v if isinstance(v, bytes) else str(v).encode() for v in values]
        return _StringTensor(array.reshape(shape))
    from . import _core

    return _core.convert_to_tensor(_np.asarray(values, dtype=dtype.as_numpy_dtype).reshape(shape))


def _cast_keys(flat, dtype, want, what):
    if want is not None and _dtypes.as_dtype(want) != dtype:
        want = _dtypes.as_dtype(want)
        if want == _dtypes.string or dtype == _dtypes.string or not (want.is_integer and dtype.is_integer):
            raise TypeError(f"{what}: key_dtype {want.name} does not fit keys of dtype {dtype.name}")
        return flat, want
    return flat, dtype


class KeyValueTensorInitializer:
    """A table's contents from a keys tensor and a values tensor of the same length."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        key_list, key_shape, kdt = _keys_array(keys)
        value_list, value_shape, vdt = _keys_array(values)
        self._keys, self.key_dtype = _cast_keys(key_list, kdt, key_dtype, "KeyValueTensorInitializer")
        self._values, self.value_dtype = _cast_keys(value_list, vdt, value_dtype, "KeyValueTensorInitializer")
        if len(key_shape) != 1 or len(value_shape) != 1:
            raise _errors.InvalidArgumentError(f"KeyValueTensorInitializer: keys and values must be 1-D, got shapes "
                                               f"{list(key_shape)} and {list(value_shape)}")
        if len(self._keys) != len(self._values):
            raise _errors.InvalidArgumentError(f"KeyValueTensorInitializer: {len(self._keys)} keys but "
                                               f"{len(self._values)} values; give one value per key")
        self._name = name or "key_value_init"

    def _items(self):
        return list(zip(self._keys, self._values))


class TextFileIndex:
    """Which part of a line a TextFileInitializer reads: the whole line, its number, or (an int >= 0) a column."""

    WHOLE_LINE = -2
    LINE_NUMBER = -1


class TextFileInitializer:
    """A table's contents from a text file: per line, the key and the value are the whole line, its number (from 0)
    or one of its delimiter-separated columns."""

    def __init__(self, filename, key_dtype, key_index, value_dtype, value_index, vocab_size=None, delimiter="\t",
                 name=None, value_index_offset=0):
        import os

        self._filename = os.fspath(bytes(filename) if isinstance(filename, _StringTensor) else filename)
        self.key_dtype, self.value_dtype = _dtypes.as_dtype(key_dtype), _dtypes.as_dtype(value_dtype)
        for index, dtype, what in ((key_index, self.key_dtype, "key"), (value_index, self.value_dtype, "value")):
            if index < TextFileIndex.WHOLE_LINE:
                raise ValueError(f"TextFileInitializer: {what}_index must be >= -2 (WHOLE_LINE), got {index}")
            if index == TextFileIndex.LINE_NUMBER and not dtype.is_integer:
                raise ValueError(f"TextFileInitializer: a {what} read from LINE_NUMBER must be an integer dtype, got "
                                 f"{dtype.name}")
            if index == TextFileIndex.WHOLE_LINE and dtype != _dtypes.string and not dtype.is_integer \
                    and not dtype.is_floating:
                raise ValueError(f"TextFileInitializer: {what} dtype {dtype.name} cannot hold a line")
        self._key_index, self._value_index = int(key_index), int(value_index)
        self._vocab_size = None if vocab_size is None else int(vocab_size)
        self._delimiter = delimiter
        self._offset = int(value_index_offset)
        self._name = name or "text_file_init"

    def _part(self, line, parts, number, index, dtype):
        if index == TextFileIndex.LINE_NUMBER:
            return number + (self._offset if index == self._value_index else 0)
        text = line if index == TextFileIndex.WHOLE_LINE else parts[index]
        if dtype == _dtypes.string:
            return text
        try:
            return int(text) if dtype.is_integer else float(text)
        except ValueError:
            raise _errors.InvalidArgumentError(f"{self._filename} line {number}: field {index} ({text!r}) is not a "
                                               f"valid {dtype.name}") from None

    def _items(self):
        from .io import gfile

        if not gfile.exists(self._filename):
            raise _errors.NotFoundError(f"TextFileInitializer: {self._filename}: no such file; check the path")
        with gfile.GFile(self._filename, "rb") as f:
            lines = f.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if self._vocab_size is not None:
            if len(lines) < self._vocab_size:
                raise _errors.InvalidArgumentError(f"TextFileInitializer: vocab_size {self._vocab_size} but "
                                                   f"{self._filename} has only {len(lines)} lines")
            lines = lines[:self._vocab_size]
        delimiter = self._delimiter.encode() if isinstance(self._delimiter, str) else self._delimiter
        need = max(self._key_index, self._value_index) + 1
        items = []
        for number, line in enumerate(lines):
            line = line[:-1] if line.endswith(b"\r") else line
            parts = line.split(delimiter) if need > 0 else None
            if need > 0 and len(parts) < need:
                raise _errors.InvalidArgumentError(f"Invalid number of columns in {self._filename} line {number} "
                                                   f"({line.decode(errors='replace')}): expected at least {need} got "
                                                   f"{len(parts)}")
            items.append((self._part(line, parts, number, self._key_index, self.key_dtype),
                          self._part(line, parts, number, self._value_index, self.value_dtype)))
        return items


def _default(value, dtype, what):
    """A table's default value, converted to its value dtype as TF converts it."""
    if hasattr(value, "numpy"):
        value = value.numpy()
        value = value.item() if hasattr(value, "item") else value
    if dtype == _dtypes.string:
        if not isinstance(value, (str, bytes)):
            raise TypeError(f"{what}: default_value {value!r} must be a string for a table of strings")
        return value.encode() if isinstance(value, str) else value
    if isinstance(value, (str, bytes)) or (dtype.is_integer and isinstance(value, float) and value != int(value)):
        raise TypeError(f"{what}: cannot convert default_value {value!r} to the table's value dtype {dtype.name}")
    return int(value) if dtype.is_integer else float(value)


def _fill(items, what):
    table = {}
    for key, value in items:
        if key in table and table[key] != value:
            raise _errors.FailedPreconditionError(f"{what} has different value for same key. Key {key!r} has "
                                                  f"{table[key]!r} and trying to add value {value!r}")
        table[key] = value
    return table


class _Table:
    """What every table has: key and value dtypes, lookup (and [ ]) of any shape of keys, size and export."""

    def __init__(self, table, key_dtype, value_dtype, default_value, name):
        self._table, self._key_dtype, self._value_dtype = table, key_dtype, value_dtype
        self._default = default_value
        self._name = name

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)
    name = property(lambda self: self._name)

    @property
    def default_value(self):
        return _tensor([self._default], (), self._value_dtype)

    def _flat_keys(self, keys):
        flat, shape, dtype = _keys_array(keys)
        if dtype != self._key_dtype:
            raise TypeError(f"Dtype of argument `keys` must be {self._key_dtype!r}, received: {dtype!r}; "
                            f"tf.cast the keys (or build the table with key_dtype={dtype.name})")
        return flat, shape

    def _map_keys(self, keys, fn):
        """fn(flat keys, shape) for a dense tensor; a RaggedTensor or SparseTensor's values are looked up."""
        if hasattr(keys, "flat_values") and hasattr(keys, "with_flat_values"):
            return keys.with_flat_values(self._map_keys(keys.flat_values, fn))
        if all(hasattr(keys, a) for a in ("indices", "values", "dense_shape")):
            return type(keys)(keys.indices, self._map_keys(keys.values, fn), keys.dense_shape)
        return fn(*self._flat_keys(keys))

    def lookup(self, keys, name=None):
        return self._map_keys(keys, lambda flat, shape: _tensor([self._table.get(k, self._default) for k in flat],
                                                                shape, self._value_dtype))

    __getitem__ = lookup

    def size(self, name=None):
        return _tensor([len(self._table)], (), _dtypes.int64)

    def export(self, name=None):
        keys = list(self._table)
        return (_tensor(keys, (len(keys),), self._key_dtype),
                _tensor([self._table[k] for k in keys], (len(keys),), self._value_dtype))


class StaticHashTable(_Table):
    """A table that does not change after its initializer fills it; missing keys give default_value."""

    def __init__(self, initializer, default_value, name=None, experimental_is_anonymous=False):
        if not isinstance(initializer, (KeyValueTensorInitializer, TextFileInitializer)):
            raise TypeError(f"StaticHashTable: initializer must be a KeyValueTensorInitializer or "
                            f"TextFileInitializer, got {type(initializer).__name__}")
        self._initializer = initializer
        super().__init__(_fill(initializer._items(), "HashTable"), initializer.key_dtype, initializer.value_dtype,
                         _default(default_value, initializer.value_dtype, "StaticHashTable"), name or "hash_table")

    initializer = property(lambda self: self._initializer)


class StaticVocabularyTable(_Table):
    """Ids (int64) of a vocabulary: keys in the initializer map to their values, any other key to vocab_size +
    Fingerprint64(key's text) % num_oov_buckets, as TensorFlow's."""

    def __init__(self, initializer, num_oov_buckets, lookup_key_dtype=None, name=None,
                 experimental_is_anonymous=False):
        if int(num_oov_buckets) <= 0:
            raise ValueError(f"`num_oov_buckets` must be > 0, got {num_oov_buckets}; use StaticHashTable for a "
                             "table without out-of-vocabulary buckets")
        if initializer.value_dtype != _dtypes.int64:
            raise TypeError(f"Invalid `value_dtype`, expected tf.int64 but got {initializer.value_dtype!r}; give "
                            "the initializer int64 values")
        if initializer.key_dtype != _dtypes.string and not initializer.key_dtype.is_integer:
            raise TypeError(f"StaticVocabularyTable: keys must be strings or integers, got "
                            f"{initializer.key_dtype.name}")
        self._num_oov_buckets = int(num_oov_buckets)
        key_dtype = _dtypes.as_dtype(lookup_key_dtype) if lookup_key_dtype is not None else initializer.key_dtype
        super().__init__(_fill(initializer._items(), "HashTable"), key_dtype, _dtypes.int64, -1,
                         name or "hash_table")

    def _id(self, key):
        from .strings import fingerprint64

        found = self._table.get(key)
        if found is not None:
            return found
        text = key if isinstance(key, bytes) else str(key).encode()
        return len(self._table) + fingerprint64(text) % self._num_oov_buckets

    def lookup(self, keys, name=None):
        return self._map_keys(keys, lambda flat, shape: _tensor([self._id(k) for k in flat], shape, _dtypes.int64))

    __getitem__ = lookup

    def size(self, name=None):
        return _tensor([len(self._table) + self._num_oov_buckets], (), _dtypes.int64)


class _MutableHashTable(_Table):
    """A table that insert and remove change, as tf.lookup.experimental.MutableHashTable."""

    def __init__(self, key_dtype, value_dtype, default_value, name="MutableHashTable", checkpoint=True,
                 experimental_is_anonymous=False):
        value_dtype = _dtypes.as_dtype(value_dtype)
        super().__init__({}, _dtypes.as_dtype(key_dtype), value_dtype,
                         _default(default_value, value_dtype, "MutableHashTable"), name)

    def insert(self, keys, values, name=None):
        flat, shape = self._flat_keys(keys)
        value_list, value_shape, _ = _keys_array(values)
        if tuple(shape) != tuple(value_shape):
            raise _errors.InvalidArgumentError(f"MutableHashTable.insert: keys have shape {list(shape)} but values "
                                               f"{list(value_shape)}; give one value per key")
        cast = int if self._value_dtype.is_integer else float if self._value_dtype.is_floating else bytes
        self._table.update(zip(flat, (cast(v) for v in value_list)))

    def remove(self, keys, name=None):
        for k in self._flat_keys(keys)[0]:
            self._table.pop(k, None)


class experimental:  # noqa: N801 (TensorFlow's module name)
    """tf.lookup.experimental."""

    MutableHashTable = _MutableHashTable

    def __getattr__(self, name):
        raise NotImplementedError(_unimplemented.message(f"tf.lookup.experimental.{name}"))


experimental = experimental()
_unimplemented.install(globals(), "tf.lookup")
