"""tf.experimental.Optional: a value or nothing, what an iterator's get_next_as_optional() gives at the end of its
data instead of raising."""


class Optional:
    """Holds one element (a nest of tensors) or none; build it with Optional.from_value or Optional.empty."""

    def __init__(self, value, has_value, element_spec):
        self._value, self._has_value, self._element_spec = value, has_value, element_spec

    @staticmethod
    def from_value(value):
        from . import _structure

        leaves = [_structure.to_leaf(leaf) for leaf in _structure.flatten(value)]
        return Optional(_structure.pack_as(value, leaves), True,
                        _structure.pack_as(value, [_structure.spec_of(leaf) for leaf in leaves]))

    @staticmethod
    def empty(element_spec):
        return Optional(None, False, element_spec)

    @property
    def element_spec(self):
        return self._element_spec

    def has_value(self, name=None):
        from .. import _core

        return _core.constant(self._has_value)

    def get_value(self, name=None):
        if not self._has_value:
            from ..errors import InvalidArgumentError

            raise InvalidArgumentError(None, None, "The optional does not have a value; check has_value() first")
        return self._value

    def __repr__(self):
        return f"<tf.experimental.Optional {'with a value' if self._has_value else 'empty'}>"


def next_as_optional(iterator):
    """The iterator's next element as an Optional; an empty one (of its element_spec) at the end."""
    try:
        return Optional(next(iterator), True, iterator.element_spec)
    except StopIteration:
        return Optional.empty(iterator.element_spec)
