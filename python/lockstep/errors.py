"""tf.errors: the exceptions lockstep raises, with TensorFlow's names and hierarchy."""


class OpError(Exception):
    """The base of the errors an operation raises, as tf.errors.OpError.

    Constructed as TensorFlow does, OpError(node_def, op, message), or with the message alone (how lockstep's C++
    side raises it).
    """

    def __init__(self, *args, **kwargs):
        if len(args) >= 3:
            node_def, op, message = args[:3]
        else:
            node_def, op = None, None
            message = kwargs.get("message", args[0] if args else "")
        super().__init__(message)
        self.node_def, self.op, self.message = node_def, op, message

    def __str__(self):
        return str(self.message)


def _error(name, doc):
    return type(name, (OpError,), {"__doc__": doc, "__module__": __name__})


CancelledError = _error("CancelledError", "An operation was cancelled.")
UnknownError = _error("UnknownError", "An error that fits no other class.")
InvalidArgumentError = _error("InvalidArgumentError", "An argument is invalid: a wrong shape, dtype or value.")
DeadlineExceededError = _error("DeadlineExceededError", "A deadline passed before the operation completed.")
NotFoundError = _error("NotFoundError", "A file or other entity does not exist.")
AlreadyExistsError = _error("AlreadyExistsError", "The entity to create exists already.")
PermissionDeniedError = _error("PermissionDeniedError", "The caller may not do this.")
UnauthenticatedError = _error("UnauthenticatedError", "The request has no valid credentials.")
ResourceExhaustedError = _error("ResourceExhaustedError", "A resource (memory, disk, a quota) ran out.")
FailedPreconditionError = _error("FailedPreconditionError", "The system is not in the state the operation needs.")
AbortedError = _error("AbortedError", "The operation was aborted.")
OutOfRangeError = _error("OutOfRangeError", "An iteration went past its end.")
UnimplementedError = _error("UnimplementedError", "The operation is not implemented.")
InternalError = _error("InternalError", "An internal invariant broke.")
UnavailableError = _error("UnavailableError", "A service (a worker, the coordination service) is unavailable.")
DataLossError = _error("DataLossError", "Data was lost or corrupted: a bad checksum, a truncated file.")
