// Error kinds and culprits as data: an exception's type mapped to a letter and back, so it can be raised again
// elsewhere, and the task it blames.
#include "lockstep/core/error.h"

namespace lockstep {

ErrorKind error_kind(const std::exception& e) {
  // Most derived first: every type below derives from Error.
  if (dynamic_cast<const ValueError*>(&e)) return ErrorKind::kValue;
  if (dynamic_cast<const InvalidArgumentError*>(&e)) return ErrorKind::kInvalidArgument;
  if (dynamic_cast<const NotFoundError*>(&e)) return ErrorKind::kNotFound;
  if (dynamic_cast<const DataLossError*>(&e)) return ErrorKind::kDataLoss;
  if (dynamic_cast<const RuntimeError*>(&e)) return ErrorKind::kRuntime;
  if (dynamic_cast<const DeadlineExceededError*>(&e)) return ErrorKind::kDeadlineExceeded;
  if (dynamic_cast<const UnavailableError*>(&e)) return ErrorKind::kUnavailable;
  if (dynamic_cast<const AlreadyExistsError*>(&e)) return ErrorKind::kAlreadyExists;
  if (dynamic_cast<const PermissionDeniedError*>(&e)) return ErrorKind::kPermissionDenied;
  if (dynamic_cast<const FailedPreconditionError*>(&e)) return ErrorKind::kFailedPrecondition;
  if (dynamic_cast<const OutOfRangeError*>(&e)) return ErrorKind::kOutOfRange;
  if (dynamic_cast<const ResourceExhaustedError*>(&e)) return ErrorKind::kResourceExhausted;
  if (dynamic_cast<const UnimplementedError*>(&e)) return ErrorKind::kUnimplemented;
  if (dynamic_cast<const Error*>(&e)) return ErrorKind::kError;
  return ErrorKind::kOther;
}

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kValue: return "ValueError";
    case ErrorKind::kInvalidArgument: return "InvalidArgumentError";
    case ErrorKind::kNotFound: return "NotFoundError";
    case ErrorKind::kDataLoss: return "DataLossError";
    case ErrorKind::kRuntime: return "RuntimeError";
    case ErrorKind::kDeadlineExceeded: return "DeadlineExceededError";
    case ErrorKind::kUnavailable: return "UnavailableError";
    case ErrorKind::kAlreadyExists: return "AlreadyExistsError";
    case ErrorKind::kPermissionDenied: return "PermissionDeniedError";
    case ErrorKind::kFailedPrecondition: return "FailedPreconditionError";
    case ErrorKind::kOutOfRange: return "OutOfRangeError";
    case ErrorKind::kResourceExhausted: return "ResourceExhaustedError";
    case ErrorKind::kUnimplemented: return "UnimplementedError";
    case ErrorKind::kNone: return "none";
    case ErrorKind::kError:
    case ErrorKind::kOther: break;
  }
  return "Error";
}

const std::string& Error::culprit() const noexcept {
  static const std::string kNobody;
  return culprit_ ? *culprit_ : kNobody;
}

std::string culprit_of(const std::exception& e) {
  const auto* error = dynamic_cast<const Error*>(&e);
  return error ? error->culprit() : std::string();
}

void raise_error(ErrorKind kind, const std::string& message, Culprit culprit) {
  switch (kind) {
    case ErrorKind::kValue: throw ValueError(message, std::move(culprit));
    case ErrorKind::kInvalidArgument: throw InvalidArgumentError(message, std::move(culprit));
    case ErrorKind::kNotFound: throw NotFoundError(message, std::move(culprit));
    case ErrorKind::kDataLoss: throw DataLossError(message, std::move(culprit));
    case ErrorKind::kRuntime: throw RuntimeError(message, std::move(culprit));
    case ErrorKind::kDeadlineExceeded: throw DeadlineExceededError(message, std::move(culprit));
    case ErrorKind::kUnavailable: throw UnavailableError(message, std::move(culprit));
    case ErrorKind::kAlreadyExists: throw AlreadyExistsError(message, std::move(culprit));
    case ErrorKind::kPermissionDenied: throw PermissionDeniedError(message, std::move(culprit));
    case ErrorKind::kFailedPrecondition: throw FailedPreconditionError(message, std::move(culprit));
    case ErrorKind::kOutOfRange: throw OutOfRangeError(message, std::move(culprit));
    case ErrorKind::kResourceExhausted: throw ResourceExhaustedError(message, std::move(culprit));
    case ErrorKind::kUnimplemented: throw UnimplementedError(message, std::move(culprit));
    case ErrorKind::kNone: throw RuntimeError("raise_error(kNone): " + message, std::move(culprit));
    case ErrorKind::kError:
    case ErrorKind::kOther: break;
  }
  throw Error(message, std::move(culprit));
}

}  // namespace lockstep
