"""tf.io.decode_csv and the record parsing behind tf.data.experimental.CsvDataset: CSV fields (RFC 4180 quoting)
parsed into the dtypes of TF's record_defaults, in Python, with TF's errors. lockstep's C++ CSV reader (data/csv.h)
carries float32 features only, so these text-capable readers do not use it.
"""
import re as _re

import numpy as _np

from .. import dtypes as _dtypes, errors as _errors
from ..data import _structure

_DTYPES = ("float32", "float64", "int32", "int64", "string")


class Column:
    """One output column: its dtype and its default (None: the field is required)."""

    def __init__(self, dtype, default):
        self.dtype, self.default = dtype, default


def columns(record_defaults, allow_dtypes=False, what="decode_csv"):
    """TF's record_defaults (one per output column: a value, a list of at most one value, a tensor or, for
    CsvDataset, a dtype) as Columns."""
    from .. import _core

    if not isinstance(record_defaults, (list, tuple)) or not record_defaults:
        raise ValueError(f"{what}: record_defaults must be a non-empty list with one default per column")
    out = []
    for i, default in enumerate(record_defaults):
        if isinstance(default, _dtypes.DType) or (isinstance(default, type) and default in (float, int, str)):
            if not allow_dtypes:
                raise ValueError(f"{what}: record_defaults[{i}] is a dtype; decode_csv takes a tensor per column: "
                                 f"[0.0] for a float column, or tf.constant([], {default!r}) for a required one")
            dtype = _dtypes.string if default is str else _dtypes.as_dtype(default)
            out.append(Column(_checked(dtype, i, what), None))
            continue
        value = default if isinstance(default, _structure.StringTensor) else _structure.normalized(default)
        if _structure.is_string(value):
            values = value._values if isinstance(value, _structure.StringTensor) else _structure._bytes_array(value)
            dtype = _dtypes.string
        else:
            tensor = _core.convert_to_tensor(value)
            values, dtype = _np.asarray(tensor.numpy()), tensor.dtype
        if _np.ndim(values) > 1:
            raise ValueError(f"{what}: record_defaults[{i}] has rank {_np.ndim(values)}; give a scalar or a list of "
                             "at most one value")
        if _np.size(values) > 1:
            raise _errors.InvalidArgumentError(f"There should only be 1 default per field but field {i} has "
                                               f"{_np.size(values)}")
        flat = _np.asarray(values, dtype=object if dtype == _dtypes.string else None).reshape(-1)
        out.append(Column(_checked(dtype, i, what), flat[0] if flat.size else None))
    return out


def _checked(dtype, i, what):
    if dtype.name not in _DTYPES:
        raise _errors.InvalidArgumentError(f"{what}: record_defaults[{i}] has dtype {dtype.name}; CSV columns are "
                                           f"one of {', '.join(_DTYPES)}")
    return dtype


def check_options(field_delim, use_quote_delim, select_cols, n_columns, what="decode_csv"):
    """field_delim as one byte, and select_cols checked against the number of record_defaults."""
    delim = field_delim.encode() if isinstance(field_delim, str) else bytes(field_delim)
    if len(delim) != 1:
        raise _errors.InvalidArgumentError(f"{what}: field_delim should be only 1 char, got {field_delim!r}")
    if select_cols is not None:
        select_cols = [int(c) for c in select_cols]
        if any(c < 0 for c in select_cols):
            raise ValueError(f"{what}: select_cols {select_cols} has a negative index")
        if any(b <= a for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError(f"{what}: select_cols is not strictly increasing: {select_cols}; sort it and drop "
                             "repeats")
        if len(select_cols) != n_columns:
            raise ValueError(f"{what}: select_cols has {len(select_cols)} entries but record_defaults has "
                             f"{n_columns}; give one default per selected column")
    return delim[0], select_cols


def split_record(record, delim, use_quote, where):
    """The fields of one CSV record (bytes): quoted fields may hold the delimiter, line breaks and doubled quotes."""
    fields, i, n = [], 0, len(record)
    if n == 0:
        return fields
    quote = ord('"')
    while True:
        if use_quote and i < n and record[i] == quote:
            field, j = bytearray(), i + 1
            while True:
                if j >= n:
                    raise _errors.InvalidArgumentError(f"Quoted field has to end with quote followed by delim or end "
                                                       f"{where}")
                if record[j] == quote:
                    if j + 1 < n and record[j + 1] == quote:
                        field.append(quote)
                        j += 2
                        continue
                    j += 1
                    break
                field.append(record[j])
                j += 1
            if j < n and record[j] != delim:
                raise _errors.InvalidArgumentError(f"Quote inside a string has to be escaped by another quote {where}")
            fields.append(bytes(field))
        else:
            j = record.find(delim, i)
            j = n if j < 0 else j
            field = record[i:j]
            if use_quote and (b'"' in field or b"\n" in field or b"\r" in field):
                raise _errors.InvalidArgumentError(f"Unquoted fields cannot have quotes/CRLFs inside {where}; quote "
                                                   "the field or pass use_quote_delim=False")
            fields.append(field)
        if j >= n:
            return fields
        i = j + 1
        if i == n:
            fields.append(b"")
            return fields


def _number(field, column, index, where):
    text = field.decode("utf-8", "replace").strip()
    try:
        if column.dtype.is_integer:
            if not _re.fullmatch(r"[+-]?[0-9]+", text):
                raise ValueError
            value = int(text)
            info = _np.iinfo(column.dtype.as_numpy_dtype)
            if not info.min <= value <= info.max:
                raise ValueError
            return value
        if "_" in text:
            raise ValueError
        return float(text)
    except ValueError:
        raise _errors.InvalidArgumentError(f"Field {index} {where} is not a valid {_tf_name(column.dtype)}: {text}; "
                                           "fix the file or give the column another default type") from None


def _tf_name(dtype):
    return {"float32": "float", "float64": "double"}.get(dtype.name, dtype.name)


def parse_fields(fields, cols, select_cols, na_value, where):
    """One record's fields as the values of its output columns."""
    if select_cols is None:
        if len(fields) != len(cols):
            raise _errors.InvalidArgumentError(f"Expect {len(cols)} fields but have {len(fields)} {where}; give one "
                                               "record_default per column (or select_cols)")
        chosen = list(enumerate(fields))
    else:
        if select_cols and len(fields) <= select_cols[-1]:
            raise _errors.InvalidArgumentError(f"Expect at least {select_cols[-1] + 1} fields (select_cols reads "
                                               f"column {select_cols[-1]}) but have {len(fields)} {where}")
        chosen = [(c, fields[c]) for c in select_cols]
    values = []
    for (index, field), column in zip(chosen, cols):
        if field == b"" or (na_value and field == na_value):
            if column.default is None:
                raise _errors.InvalidArgumentError(f"Field {index} is required but missing {where}; fill it in or "
                                                   "give the column a default")
            values.append(column.default)
        elif column.dtype == _dtypes.string:
            values.append(field)
        else:
            values.append(_number(field, column, index, where))
    return values


def column_tensor(values, column, shape):
    """A column's values (a flat list) as a tensor of shape."""
    if column.dtype == _dtypes.string:
        array = _np.empty(len(values), dtype=object)
        array[:] = [v if isinstance(v, bytes) else str(v).encode() for v in values]
        return _structure.StringTensor(array.reshape(shape))
    from .. import _core

    return _core.convert_to_tensor(_np.asarray(values, dtype=column.dtype.as_numpy_dtype).reshape(shape))


def decode_csv(records, record_defaults, field_delim=",", use_quote_delim=True, name=None, na_value="",
               select_cols=None):
    """Each CSV record (a string tensor of any shape) parsed into columns: a list of tensors of records' shape, one
    per record_default, of its dtype (an empty default makes the column required)."""
    cols = columns(record_defaults)
    delim, select_cols = check_options(field_delim, use_quote_delim, select_cols, len(cols))
    if isinstance(records, _structure.StringTensor):
        array = records._values
    elif _structure.is_string(records) or isinstance(records, (list, tuple)):
        array = _structure._bytes_array(records)
    else:
        raise TypeError(f"decode_csv: records must be a tf.string tensor, got {type(records).__name__}")
    na = na_value.encode() if isinstance(na_value, str) else bytes(na_value)
    rows = [parse_fields(split_record(r, delim, bool(use_quote_delim), f"in record {i}"), cols, select_cols, na,
                         f"in record {i}") for i, r in enumerate(array.reshape(-1))]
    return [column_tensor([row[c] for row in rows], col, array.shape) for c, col in enumerate(cols)]


def file_records(path, compression, use_quote):
    """The records of one CSV file, with their line numbers: lines, joined while a quoted field is still open."""
    import gzip

    opener = gzip.open if compression == "GZIP" else open
    try:
        f = opener(path, "rb")
    except FileNotFoundError:
        raise _errors.NotFoundError(f"CsvDataset: {path}: no such file; check the file name") from None
    with f:
        pending, start = None, 0
        for number, line in enumerate(f, 1):
            if pending is None:
                pending, start = line, number
            else:
                pending += line
            if use_quote and pending.count(b'"') % 2:
                continue  # a quoted field runs on to the next line
            yield start, pending[:-2] if pending.endswith(b"\r\n") else pending.rstrip(b"\n")
            pending = None
        if pending is not None:
            yield start, pending
