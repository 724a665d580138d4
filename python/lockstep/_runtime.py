"""Top-level tf.* names about the program rather than about tensors: the logger, type specs of values, and the
assertions that tf.debugging also holds."""
import logging as _logging

import numpy as _np

from . import errors as _errors


def get_logger():
    """The "tensorflow" logger, as TF's: programs set its level to quieten TensorFlow's (here lockstep's) logs."""
    return _logging.getLogger("tensorflow")


def type_spec_from_value(value):
    """The TypeSpec of a value: a TensorSpec for a tensor, NumPy array or Python number, the value's own spec for
    composite values (SparseTensor, RaggedTensor, ExtensionType), a DatasetSpec-like element_spec for a dataset."""
    from . import _core
    from .data._structure import TensorSpec

    own = getattr(value, "_type_spec", None)
    if own is not None:
        return own
    if hasattr(value, "element_spec") and hasattr(value, "_structure"):
        return value.element_spec
    try:
        return TensorSpec.from_tensor(_core.convert_to_tensor(value))
    except (TypeError, ValueError, _errors.InvalidArgumentError):
        raise TypeError(f"Could not build a TypeSpec for {value!r} of type {type(value).__name__}") from None


def _numpy(x):
    value = x.numpy() if hasattr(x, "numpy") else x
    return _np.asarray(value)


def _fail(message, summarize, detail):
    text = f"{message}: {detail}" if message else detail
    raise _errors.InvalidArgumentError(None, None, text)


def _comparison(name, test, relation):
    def check(x, y, message=None, summarize=None, name=None):
        a, b = _numpy(x), _numpy(y)
        try:
            ok = _np.all(test(a, b))
        except ValueError:
            raise ValueError(f"{check.__name__}: shapes {list(a.shape)} and {list(b.shape)} do not broadcast; give "
                             "tensors of compatible shapes") from None
        if not ok:
            _fail(message, summarize, f"Condition x {relation} y did not hold element-wise: x = {a!r}, y = {b!r}")

    check.__name__ = name
    check.__doc__ = f"tf.debugging.{name}: InvalidArgumentError unless x {relation} y everywhere (broadcast)."
    return check


assert_equal = _comparison("assert_equal", _np.equal, "==")
assert_none_equal = _comparison("assert_none_equal", _np.not_equal, "!=")
assert_less = _comparison("assert_less", _np.less, "<")
assert_less_equal = _comparison("assert_less_equal", _np.less_equal, "<=")
assert_greater = _comparison("assert_greater", _np.greater, ">")
assert_greater_equal = _comparison("assert_greater_equal", _np.greater_equal, ">=")


def _sign(name, test, relation):
    def check(x, message=None, summarize=None, name=None):
        a = _numpy(x)
        if not _np.all(test(a)):
            _fail(message, summarize, f"Condition x {relation} did not hold element-wise: x = {a!r}")

    check.__name__ = name
    return check


assert_positive = _sign("assert_positive", lambda a: a > 0, "> 0")
assert_negative = _sign("assert_negative", lambda a: a < 0, "< 0")
assert_non_negative = _sign("assert_non_negative", lambda a: a >= 0, ">= 0")
assert_non_positive = _sign("assert_non_positive", lambda a: a <= 0, "<= 0")


def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None, name=None):
    """|x - y| <= atol + rtol * |y| everywhere; TF's default tolerances are 10 machine epsilons of the dtype."""
    a, b = _numpy(x), _numpy(y)
    eps = _np.finfo(a.dtype).eps if a.dtype.kind == "f" else _np.finfo(_np.float32).eps
    rtol = 10 * eps if rtol is None else rtol
    atol = 10 * eps if atol is None else atol
    if not _np.all(_np.abs(a - b) <= atol + rtol * _np.abs(b)):
        _fail(message, summarize, f"x and y not equal to tolerance rtol = {rtol}, atol = {atol}: x = {a!r}, "
                                  f"y = {b!r}")


def assert_rank(x, rank, message=None, name=None):
    actual = _numpy(x).ndim
    if actual != int(rank):
        raise ValueError(f"{message + ': ' if message else ''}Tensor must have rank {int(rank)}. Received rank "
                         f"{actual}, shape {list(_numpy(x).shape)}")


def assert_rank_at_least(x, rank, message=None, name=None):
    actual = _numpy(x).ndim
    if actual < int(rank):
        raise ValueError(f"{message + ': ' if message else ''}Tensor must have rank at least {int(rank)}. Received "
                         f"rank {actual}, shape {list(_numpy(x).shape)}")


def assert_rank_in(x, ranks, message=None, name=None):
    actual = _numpy(x).ndim
    if actual not in [int(r) for r in ranks]:
        raise ValueError(f"{message + ': ' if message else ''}Tensor must have rank in {list(ranks)}. Received rank "
                         f"{actual}")


def assert_type(tensor, tf_type, message=None, name=None):
    from . import dtypes

    if tensor.dtype != dtypes.as_dtype(tf_type):
        raise TypeError(f"{message + ': ' if message else ''}{tensor!r} must be of type {dtypes.as_dtype(tf_type)!r}; "
                        f"got {tensor.dtype!r}")


def assert_integer(x, message=None, name=None):
    if not x.dtype.is_integer:
        raise TypeError(f"{message + ': ' if message else ''}Expected integer tensor, got {x.dtype!r}")


def assert_scalar(tensor, message=None, name=None):
    assert_rank(tensor, 0, message)
    return tensor


def assert_all_finite(t, message, name=None):
    return check_numerics(t, message)


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Checks each tensor's shape against a list of dimension names or sizes; a name must mean one size throughout
    (TF's symbolic check)."""
    sizes = {}
    for x, expected in (shapes.items() if isinstance(shapes, dict) else shapes):
        shape = _numpy(x).shape
        expected = list(expected)
        if len(expected) != len(shape) and not (expected and expected[0] in ("...", Ellipsis)):
            raise ValueError(f"{message + ': ' if message else ''}Specified by tensor {x!r} dimension count: "
                             f"expected rank {len(expected)}, got shape {list(shape)}")
        dims = shape[len(shape) - len(expected) + 1:] if expected and expected[0] in ("...", Ellipsis) else shape
        for dim, want in zip(dims, [e for e in expected if e not in ("...", Ellipsis)]):
            if isinstance(want, str) and want != ".":
                want = sizes.setdefault(want, dim)
            if want not in (None, ".") and int(want) != dim:
                raise ValueError(f"{message + ': ' if message else ''}Specified by tensor {x!r}: expected shape "
                                 f"{expected}, got {list(shape)}")


def check_numerics(tensor, message, name=None):
    """The tensor, unchanged, when it has no NaN or infinity; otherwise InvalidArgumentError naming what it has."""
    a = _numpy(tensor)
    if a.dtype.kind != "f" and str(a.dtype) != "bfloat16":
        raise TypeError(f"check_numerics: tensor must be floating-point, got {tensor.dtype!r}")
    bad = [what for what, found in (("Inf", _np.isinf(a).any()), ("NaN", _np.isnan(a).any())) if found]
    if bad:
        raise _errors.InvalidArgumentError(None, None, f"{message} : Tensor had {' and '.join(bad)} values")
    return tensor


def is_numeric_tensor(tensor):
    return hasattr(tensor, "dtype") and (tensor.dtype.is_floating or tensor.dtype.is_integer)


__all__ = ["get_logger", "type_spec_from_value", "assert_equal", "assert_greater", "assert_less", "assert_rank"]
