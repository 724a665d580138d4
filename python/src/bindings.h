// What the files of lockstep's Python binding share: turning Python values into tensors and back, and one bind_*
// function per area, each called once by module.cc. The module is lockstep._lockstep; the Python package
// (python/lockstep) gives its contents TensorFlow's names.
#pragma once
#include <nanobind/nanobind.h>

#include <memory>
#include <optional>
#include <string>

#include "lockstep/core/dtype.h"
#include "lockstep/data/element.h"
#include "lockstep/tensor/tensor.h"

namespace lockstep::python {

namespace nb = nanobind;

// A reference to a Python object that C++ may copy and drop on any thread, with or without the GIL: the last owner
// drops it holding the GIL, and once the interpreter is finalizing leaks it rather than touch it.
class PyRef {
 public:
  PyRef() = default;
  explicit PyRef(nb::handle h)
      : obj_(h.inc_ref().ptr(), [](PyObject* p) {
          if (!Py_IsInitialized() || _Py_IsFinalizing()) return;
          nb::gil_scoped_acquire gil;
          Py_DECREF(p);
        }) {}
  nb::handle get() const { return obj_.get(); }
  explicit operator bool() const { return obj_ != nullptr; }

 private:
  std::shared_ptr<PyObject> obj_;
};

// The dtype a Python value names: a lockstep.DType, the module's DType enum, a name ("float32") or a NumPy dtype.
DType to_dtype(nb::handle value);

// What TensorFlow accepts as a tensor: a Tensor, a Variable, a NumPy array or scalar, a Python number, bool or
// (nested) list. `dtype` is the dtype the caller asks for: Python and NumPy data is converted to it, a tensor of
// another dtype is an error, as in tf.convert_to_tensor. Without it, a tensor keeps its dtype, NumPy data keeps its
// dtype and Python data becomes float32, int32 or bool, as TensorFlow's does. `hint` is the dtype Python numbers
// take when the call does not fix one (the other operand's, in `x * 2`).
Tensor to_tensor(nb::handle value, std::optional<DType> dtype = std::nullopt, std::optional<DType> hint = std::nullopt);

// A NumPy array of the tensor's values: a view of its memory (kept alive by the array) when the tensor is
// contiguous, else a contiguous copy; bfloat16, which NumPy lacks, becomes float32.
nb::object to_numpy(const Tensor& t);

// A dataset element as Python sees it (data.cc): tuples, lists and dicts as Python's, Tensor leaves as Tensors, string
// leaves as lockstep.data's StringTensor, None as None. element_from_python takes the same forms (any tuple subclass
// is a tuple; a leaf that is neither a Tensor nor a StringTensor goes through to_tensor).
nb::object element_to_python(const data::Element& e);
data::Element element_from_python(nb::handle value);

void bind_tensor(nb::module_& m);
void bind_data(nb::module_& m);
void bind_distribute(nb::module_& m);
void bind_keras(nb::module_& m);
void bind_train(nb::module_& m);
void bind_registries(nb::module_& m);
void bind_example_messages(nb::module_& m);  // io.cc: tf.train.Example's messages in _lockstep.io
void bind_cluster_spec(nb::module_& m);      // cluster_spec.cc: tf.train.ClusterSpec in _lockstep.distribute

}  // namespace lockstep::python
