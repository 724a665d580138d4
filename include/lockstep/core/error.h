// Error types. Messages name the thing, the expected and the actual value, and what to do; the CLI turns
// a lockstep::Error into one line on stderr and exit code 2.
#pragma once
#include <stdexcept>
#include <string>

namespace lockstep {

// Base of every error lockstep raises for a user's mistake or a failed environment.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
