"""The Python face of lockstep's Variable (a C++ object): TensorFlow's name, assign methods and printing."""
import numpy as _np

from . import _lockstep, _tensor, dtypes

Variable = _lockstep.Variable
_tensor._install(Variable)


def _assign_method(primitive):
    def assign(self, value, use_locking=None, name=None, read_value=True):
        primitive(self, value)
        return self if read_value else None

    return assign


Variable.assign = _assign_method(Variable._assign)
Variable.assign_add = _assign_method(Variable._assign_add)
Variable.assign_sub = _assign_method(Variable._assign_sub)
Variable.name = property(lambda v: v._name if ":" in v._name else v._name + ":0")
Variable.numpy = lambda v: _np.array(_lockstep.ops.to_numpy(v))  # a copy: TF's does not follow later assigns
Variable.__repr__ = lambda v: (f"<tf.Variable '{v.name}' shape={v.shape} dtype={v.dtype.name}, "
                               f"numpy={_np.array2string(v.numpy(), separator=' ')}>")
Variable.__str__ = Variable.__repr__
Variable.__format__ = lambda v, spec: format(v.numpy(), spec) if v._shape_tuple == [] else str(v)
Variable.initial_value = property(lambda v: v.read_value())
Variable.constraint = None
Variable.synchronization = property(lambda v: "AUTO")
Variable.aggregation = property(lambda v: "NONE")
Variable.handle = property(lambda v: v)
del dtypes
