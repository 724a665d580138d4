"""tf.types: the abstract types TensorFlow's tracing API names. lockstep runs tf.function eagerly and never traces,
so these are what user code subclasses or checks against; TraceType's protocol is kept for code that defines it."""
import abc as _abc
import types as _pytypes
import typing as _typing

from . import _unimplemented


class TraceType(_abc.ABC):
    """The type of a tf.function argument for tracing (TF's protocol): equal types reuse one trace. lockstep
    does not trace, so nothing calls these; a subclass must still define them, as in TensorFlow."""

    @_abc.abstractmethod
    def is_subtype_of(self, other):
        """Whether every value of this type is also of `other`."""

    @_abc.abstractmethod
    def most_specific_common_supertype(self, others):
        """The narrowest type that this one and each of `others` are subtypes of, or None."""

    def placeholder_value(self, placeholder_context):
        raise NotImplementedError(f"{type(self).__name__}.placeholder_value: lockstep does not trace tf.functions")

    @_abc.abstractmethod
    def __eq__(self, other):
        pass

    @_abc.abstractmethod
    def __hash__(self):
        pass


class SupportsTracingProtocol(_abc.ABC):
    """A value that gives its own TraceType through __tf_tracing_type__(context)."""

    @_abc.abstractmethod
    def __tf_tracing_type__(self, context):
        pass


class Callable(_abc.ABC):
    """Something TensorFlow can call with tensors (a tf.function, a concrete function)."""

    @_abc.abstractmethod
    def __call__(self, *args, **kwargs):
        pass


class GenericFunction(Callable):
    """What tf.function returns (TF 2.21 calls it PolymorphicFunction)."""


PolymorphicFunction = GenericFunction


class ConcreteFunction(Callable):
    """One signature of a tf.function."""


def _tensor_like():
    from . import _tensor

    return _typing.Union[_tensor.Tensor, int, float, bool, str, bytes, list, tuple]


experimental = _pytypes.ModuleType(f"{__name__}.experimental", "tf.types.experimental")
for _cls in (TraceType, SupportsTracingProtocol, Callable, GenericFunction, ConcreteFunction):
    setattr(experimental, _cls.__name__, _cls)
experimental.PolymorphicFunction = PolymorphicFunction
experimental.TensorLike = _tensor_like()
_unimplemented.install(experimental.__dict__, "tf.types.experimental")
_unimplemented.install(globals(), "tf.types")
