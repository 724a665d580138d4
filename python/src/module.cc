// lockstep._lockstep: the extension module. lockstep's errors become the Python exceptions TensorFlow raises for
// them (lockstep/errors.py defines tf.errors' classes), with the same one-line message the CLI prints.
#include <Python.h>

#include "bindings.h"
#include <nanobind/stl/string.h>

#include "lockstep/core/error.h"
#include "lockstep/core/failure_report.h"
#include "lockstep/core/version.h"

namespace lockstep::python {
namespace {

// The Python class lockstep.errors names for `kind`: TensorFlow's OpError subclasses, ValueError, RuntimeError.
PyObject* exception_class(ErrorKind kind) {
  const char* name = nullptr;
  switch (kind) {
    case ErrorKind::kValue: return PyExc_ValueError;
    case ErrorKind::kRuntime: return PyExc_RuntimeError;
    case ErrorKind::kInvalidArgument: name = "InvalidArgumentError"; break;
    case ErrorKind::kNotFound: name = "NotFoundError"; break;
    case ErrorKind::kDataLoss: name = "DataLossError"; break;
    case ErrorKind::kDeadlineExceeded: name = "DeadlineExceededError"; break;
    case ErrorKind::kUnavailable: name = "UnavailableError"; break;
    case ErrorKind::kAlreadyExists: name = "AlreadyExistsError"; break;
    case ErrorKind::kPermissionDenied: name = "PermissionDeniedError"; break;
    case ErrorKind::kFailedPrecondition: name = "FailedPreconditionError"; break;
    case ErrorKind::kOutOfRange: name = "OutOfRangeError"; break;
    case ErrorKind::kResourceExhausted: name = "ResourceExhaustedError"; break;
    case ErrorKind::kUnimplemented: name = "UnimplementedError"; break;
    default: name = "UnknownError"; break;
  }
  static PyObject* errors = nb::module_::import_("lockstep.errors").release().ptr();  // kept for the process's life
  return nb::handle(errors).attr(name).ptr();
}

}  // namespace
}  // namespace lockstep::python

NB_MODULE(_lockstep, m) {
  namespace nb = nanobind;
  using namespace lockstep::python;
  m.attr("__version__") = lockstep::version();
  // Objects a program still holds when the interpreter exits are not freed by Python's shutdown; that is not a
  // leak worth a report on every exit.
  nb::set_leak_warnings(false);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const lockstep::Error& e) {
      // The task the error blames rides along as `culprit`, for the failure report a worker sends its launcher.
      PyObject* type = exception_class(lockstep::error_kind(e));
      nb::object error = nb::borrow(type)(e.what());
      if (!e.culprit().empty()) error.attr("culprit") = e.culprit();
      PyErr_SetObject(type, error.ptr());
    }
  });
  // Tells `lockstep launch` how this worker failed (an uncaught Python exception: lockstep/_failure.py): the
  // error's class name, as lockstep::error_kind_name spells it, and the task it blames, if any.
  m.def("_report_failure", [](const std::string& kind_name, const std::string& culprit) {
    lockstep::FailureReport report{lockstep::reportable_kind(kind_name).value_or(lockstep::ErrorKind::kError), culprit};
    lockstep::report_failure(report);
  });
  bind_tensor(m);
  bind_data(m);
  bind_distribute(m);
  bind_keras(m);
  bind_train(m);
  bind_registries(m);
  bind_example_messages(m);
  bind_cluster_spec(m);
}
