// Error types. Messages name the thing, the expected and the actual value, and what to do; the CLI turns
// a lockstep::Error into one line on stderr and exit code 2.
#pragma once
#include <memory>
#include <stdexcept>
#include <string>

namespace lockstep {

// The task ("worker:1", TF's task name) that an error blames: the one whose failure it reports, or that did
// not arrive. Data, so that whoever decides whom to blame (the launcher, through the worker's failure report
// in lockstep/core/failure_report.h) never reads it out of the message.
struct Culprit {
  std::string task;
};

// Base of every error lockstep raises for a user's mistake or a failed environment.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  Error(const std::string& message, Culprit culprit)
      : std::runtime_error(message),
        culprit_(culprit.task.empty() ? nullptr : std::make_shared<const std::string>(std::move(culprit.task))) {}
  // The task this error blames; empty when it blames no other task.
  const std::string& culprit() const noexcept;

 private:
  std::shared_ptr<const std::string> culprit_;  // shared: copying an exception must not throw
};
// A bad argument value: unknown name, out-of-range axis, malformed configuration (TF: ValueError).
class ValueError : public Error {
 public:
  using Error::Error;
};
// Shapes or dtypes that do not fit together (TF: InvalidArgumentError).
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};
// A missing file or data set (TF: NotFoundError).
class NotFoundError : public Error {
 public:
  using Error::Error;
};
// Corrupted or truncated data (TF: DataLossError).
class DataLossError : public Error {
 public:
  using Error::Error;
};
// A call that is not valid in the current state, such as a second gradient() on a non-persistent tape.
class RuntimeError : public Error {
 public:
  using Error::Error;
};
// A wait that ran past its deadline (TF: DeadlineExceededError).
class DeadlineExceededError : public Error {
 public:
  using Error::Error;
};
// A peer or service that went away (TF: UnavailableError).
class UnavailableError : public Error {
 public:
  using Error::Error;
};
// Something to be created exists already, such as a file renamed over without overwrite (TF: AlreadyExistsError).
class AlreadyExistsError : public Error {
 public:
  using Error::Error;
};
// The system refused access to a file or directory (TF: PermissionDeniedError).
class PermissionDeniedError : public Error {
 public:
  using Error::Error;
};
// The state does not allow the call, such as a directory where a file is expected (TF: FailedPreconditionError).
class FailedPreconditionError : public Error {
 public:
  using Error::Error;
};

// A position or size past the end, such as a seek beyond the end of a file (TF: OutOfRangeError).
class OutOfRangeError : public Error {
 public:
  using Error::Error;
};
// A resource ran out: disk space, quota, file handles, memory (TF: ResourceExhaustedError).
class ResourceExhaustedError : public Error {
 public:
  using Error::Error;
};
// An operation this system or file system does not offer, such as a rename across file systems
// (TF: UnimplementedError).
class UnimplementedError : public Error {
 public:
  using Error::Error;
};

// The type of an error as data, so that it can cross to another worker or process and be raised there as the
// same type (distribute's cross-worker toolkit, the launcher's failure reports). kOther: any other exception.
enum class ErrorKind : char {
  kNone = '-', kError = 'E', kValue = 'V', kInvalidArgument = 'I', kNotFound = 'N', kDataLoss = 'D',
  kRuntime = 'R', kDeadlineExceeded = 'T', kUnavailable = 'U', kAlreadyExists = 'A', kPermissionDenied = 'P',
  kFailedPrecondition = 'F', kOutOfRange = 'B', kResourceExhausted = 'X', kUnimplemented = 'M', kOther = 'O'
};
// The kind of `e`: its most derived lockstep error type, or kOther.
ErrorKind error_kind(const std::exception& e);
// TF's name of the kind ("NotFoundError"; "Error" for kError and kOther).
const char* error_kind_name(ErrorKind kind);
// Throws the error type of `kind` with `message` and `culprit` (kOther and kError throw Error; kNone is a bug:
// RuntimeError).
[[noreturn]] void raise_error(ErrorKind kind, const std::string& message, Culprit culprit = {});
// The task that `e` blames: Error::culprit(), or empty for any other exception.
std::string culprit_of(const std::exception& e);

// Builds a message from streamable parts: make_message("expected ", a, ", got ", b).
template <typename... Parts> std::string make_message(const Parts&... parts);

}  // namespace lockstep

#include <sstream>
template <typename... Parts> std::string lockstep::make_message(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

// Throws ErrorType with the message when `cond` is false: LS_CHECK(a == b, ValueError, "...", a).
#define LS_CHECK(cond, ErrorType, ...)                                   \
  do {                                                                   \
    if (!(cond)) throw ::lockstep::ErrorType(::lockstep::make_message(__VA_ARGS__)); \
  } while (0)
