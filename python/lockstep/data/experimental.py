"""tf.data.experimental: the auto-shard policy and distribute options, and the few helpers lockstep has."""
from .. import _unimplemented
from ..dtypes import string
from ._structure import TensorSpec
from ._dataset import AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY  # noqa: F401
from ._options import AutoShardPolicy, AutotuneOptions, DistributeOptions, OptimizationOptions  # noqa: F401
from ._options import ThreadingOptions  # noqa: F401


class TFRecordWriter:
    """Writes a dataset of tf.string scalars to a TFRecord file, as tf.data.experimental.TFRecordWriter."""

    def __init__(self, filename, compression_type=None):
        from ._readers import compression_name

        self._filename, self._compression = filename, compression_name(compression_type)

    def write(self, dataset):
        from .._lockstep import io
        from ._structure import StringTensor

        if not isinstance(dataset.element_spec, TensorSpec) or dataset.element_spec.dtype != string:
            raise TypeError(f"TFRecordWriter.write: the dataset's elements must be tf.string scalars, got "
                            f"{dataset.element_spec}")
        writer = io.TFRecordWriter(str(self._filename), self._compression)
        for record in dataset:
            writer.write(bytes(record) if isinstance(record, StringTensor) else record)
        writer.close()


def make_csv_dataset(file_pattern, batch_size, column_names=None, column_defaults=None, label_name=None,
                     select_columns=None, field_delim=",", use_quote_delim=True, na_value="", header=True,
                     num_epochs=None, shuffle=True, shuffle_buffer_size=10000, shuffle_seed=None,
                     prefetch_buffer_size=None, num_parallel_reads=None, sloppy=False, num_rows_for_inference=100,
                     compression_type=None, ignore_errors=False, encoding="utf-8"):
    """Batches of (features, label) from CSV files, as TF's: features is a dict of columns [batch]. The rows are read,
    shuffled, repeated and batched by lockstep::data's CSV reader (data/csv.h); the columns are split in Python, one
    call per batch. Integer columns are int32 and the others float32, inferred from the first rows as TF does (the
    reader carries them as float32, exact up to 2**24); text columns are not read."""
    from .._lockstep import data as _C
    from ._dataset import AUTOTUNE as _AUTOTUNE, Dataset
    from ._readers import compression_name
    from ._structure import Structure

    if ignore_errors:
        raise NotImplementedError("make_csv_dataset(ignore_errors=True) is not implemented by lockstep (see "
                                  "docs/python.md)")
    options = _C.CsvOptions()
    compression = compression_name(compression_type)
    header_names, rows = _csv_head(file_pattern, field_delim, compression, encoding, header, num_rows_for_inference)
    names = list(column_names) if column_names else header_names
    if column_names:
        options.column_names = names
    if column_defaults is not None:
        options.column_defaults = [_csv_default(d) for d in column_defaults]
    if select_columns is not None:
        select_columns = [names[c] if isinstance(c, int) else c for c in select_columns]
        options.select_columns = select_columns
    options.label_name = label_name or ""
    options.field_delim, options.use_quote_delim, options.na_value = field_delim, bool(use_quote_delim), na_value
    options.header, options.num_epochs = bool(header), -1 if num_epochs is None else int(num_epochs)
    options.shuffle, options.shuffle_buffer_size = bool(shuffle), int(shuffle_buffer_size)
    options.shuffle_seed = None if shuffle_seed is None else int(shuffle_seed)
    options.num_rows_for_inference, options.compression_type = int(num_rows_for_inference), compression
    cpp = _C.Dataset.make_csv_dataset(str(file_pattern), int(batch_size), options)
    features = [n for n in names if (select_columns is None or n in select_columns) and n != label_name]
    first = next(cpp.without_shuffles().make_iterator(0))
    first = first if isinstance(first, tuple) else (first,)  # (features, label), or features alone
    specs = tuple(TensorSpec([None] + list(t.shape)[1:], t.dtype) for t in first)
    batches = Dataset(cpp, Structure(specs if label_name else specs[0]))

    integer = {n for i, n in enumerate(names) if _all_integers(row[i] for row in rows if i < len(row))
               and not (column_defaults is not None and isinstance(_first(column_defaults[i]), float))}
    from .. import _core
    from ..dtypes import int32

    def columns(x, y=None):  # integer columns are int32, as TF infers them
        named = {name: _core.cast(x[:, i], int32) if name in integer else x[:, i] for i, name in enumerate(features)}
        return named if y is None else (named, y)

    return batches.map(columns).prefetch(_AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size)


def _csv_head(file_pattern, field_delim, compression, encoding, header, num_rows):
    """The column names on the first line of the first file matching the pattern, and its first data rows."""
    import csv
    import gzip
    import io as _io
    import itertools

    from ..io import gfile

    files = sorted(gfile.glob(str(file_pattern)))
    if not files:
        from ..errors import NotFoundError

        raise NotFoundError(f"make_csv_dataset: no files match {file_pattern}; check the pattern")
    with gfile.GFile(files[0], "rb") as f:
        raw = f.read()
    if compression == "GZIP":
        raw = gzip.decompress(raw)
    lines = csv.reader(_io.StringIO(raw.decode(encoding)), delimiter=field_delim)
    names = next(lines, []) if header else []
    return names, list(itertools.islice(lines, num_rows))


def _all_integers(fields):
    """TF's inference: a column whose (non-empty) fields all parse as integers is int32."""
    seen = False
    for field in fields:
        if field == "":
            continue
        try:
            int(field)
        except ValueError:
            return False
        seen = True
    return seen


def _first(default):
    return default[0] if isinstance(default, (list, tuple)) and default else default


def _csv_default(default):
    """A column default as the C++ reader takes it: a number, or None (required) for a dtype or an empty list."""
    if isinstance(default, (list, tuple)):
        if not default:
            return None
        default = default[0]
    if hasattr(default, "_lockstep_dtype") and not hasattr(default, "numpy"):
        return None
    if hasattr(default, "numpy"):
        default = default.numpy()
    if isinstance(default, (str, bytes)):
        raise NotImplementedError("make_csv_dataset: text columns are not implemented by lockstep (see "
                                  "docs/python.md); leave them out with select_columns")
    return float(default)


def _csv_dataset_base():
    from ._dataset import Dataset

    return Dataset


class CsvDataset(_csv_dataset_base()):
    """The records of CSV files as tuples of scalars, one per record_default (a default value, or a dtype for a
    required column), as tf.data.experimental.CsvDataset. Rows are parsed in Python (io/_csv.py: the C++ CSV reader
    has no text columns) and pulled by the C++ pipeline as a generator."""

    def __init__(self, filenames, record_defaults, compression_type=None, buffer_size=None, header=False,
                 field_delim=",", use_quote_delim=True, na_value="", select_cols=None, exclude_cols=None, name=None):
        from ..io import _csv
        from ._dataset import Dataset
        from ._readers import compression_name, filenames_of

        files = filenames_of(filenames, "CsvDataset")
        compression = compression_name(compression_type)
        cols = _csv.columns(record_defaults, allow_dtypes=True, what="CsvDataset")
        if select_cols is not None and exclude_cols is not None:
            raise ValueError("CsvDataset: pass select_cols or exclude_cols, not both")
        if exclude_cols is not None:
            excluded = sorted({int(c) for c in exclude_cols})
            select_cols = [c for c in range(len(cols) + len(excluded)) if c not in excluded]
        delim, select_cols = _csv.check_options(field_delim, use_quote_delim, select_cols, len(cols), "CsvDataset")
        na = na_value.encode() if isinstance(na_value, str) else bytes(na_value)
        quote = bool(use_quote_delim)

        def rows():
            for path in files:
                records = _csv.file_records(path, compression, quote)
                if header:
                    next(records, None)
                for line, record in records:
                    where = f"in record at {path}:{line}"
                    values = _csv.parse_fields(_csv.split_record(record, delim, quote, where), cols, select_cols, na,
                                               where)
                    yield tuple(_csv.column_tensor([v], c, ()) for v, c in zip(values, cols))

        ds = Dataset.from_generator(rows, output_signature=tuple(TensorSpec([], c.dtype) for c in cols))
        super().__init__(ds._cpp, ds._lazy, ds._opts)


def Counter(start=0, step=1, dtype=None):  # noqa: N802 (TensorFlow's name)
    from ..dtypes import int64
    from ._dataset import Dataset

    return Dataset.counter(start, step, int64 if dtype is None else dtype)


def cardinality(dataset):
    return dataset.cardinality()


def get_structure(dataset_or_iterator):
    return dataset_or_iterator.element_spec


def unbatch():
    return lambda dataset: dataset.unbatch()


def scan(initial_state, scan_func):
    return lambda dataset: dataset.scan(initial_state, scan_func)


def sample_from_datasets(datasets, weights=None, seed=None, stop_on_empty_dataset=False):
    from ._dataset import Dataset

    return Dataset.sample_from_datasets(datasets, weights, seed, stop_on_empty_dataset)


def enumerate_dataset(start=0):
    return lambda dataset: dataset.enumerate(start)


def get_single_element(dataset):
    return dataset.get_single_element()


_unimplemented.install(globals(), "tf.data.experimental")
