"""tf.keras.mixed_precision: dtype policies ("float32", "mixed_bfloat16"); layers made after set_global_policy
compute in the policy's dtype."""
from .. import _lockstep, _unimplemented

_k = _lockstep.keras


class DTypePolicy:
    """A dtype policy by name; an unknown name is a ValueError listing lockstep's."""

    def __init__(self, name="float32"):
        self._name = _k.check_policy(name.name if isinstance(name, DTypePolicy) else str(name))

    name = property(lambda self: self._name)
    compute_dtype = property(lambda self: "bfloat16" if self._name == "mixed_bfloat16" else "float32")
    variable_dtype = property(lambda self: "float32")

    def __eq__(self, other):
        return isinstance(other, DTypePolicy) and other._name == self._name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return f'<DTypePolicy "{self._name}">'

    def get_config(self):
        return {"name": self._name}


Policy = DTypePolicy


def set_global_policy(policy):
    _k.set_global_policy(DTypePolicy(policy).name)


def global_policy():
    return DTypePolicy(_k.global_policy())


set_dtype_policy, dtype_policy = set_global_policy, global_policy

_unimplemented.install(globals(), "tf.keras.mixed_precision")
