// A worker's last word to its launcher, as data: the kind of the error that ends the process and the task that
// error blames. `lockstep launch` hands each worker the write end of a pipe (kFailurePipeVariable) and reads it
// when the worker exits, so that it blames a task from facts rather than from words in the worker's log.
#pragma once
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "lockstep/core/error.h"

namespace lockstep {

// "<fd>:<inode>": the pipe's descriptor in the worker and its inode, which the worker checks before writing, so
// that a descriptor number inherited without its pipe is never written to.
inline constexpr const char* kFailurePipeVariable = "LOCKSTEP_FAILURE_PIPE";

struct FailureReport {
  ErrorKind kind = ErrorKind::kOther;
  std::string culprit;  // the task the error blames ("worker:1"); empty when it blames no other task
};

// One line: "kind=UnavailableError culprit=worker:1\n", "culprit=-" when it blames nobody.
std::string format_failure_report(const FailureReport& report);
// The first report in `text`; nullopt when there is none or it is malformed.
std::optional<FailureReport> parse_failure_report(std::string_view text);
// The kind a report can name under `name` (error_kind_name's spelling: "ValueError", "NotFoundError"), if any.
std::optional<ErrorKind> reportable_kind(std::string_view name);
// The report for an exception: its kind and Error::culprit().
FailureReport failure_report_of(const std::exception& e);
// Sends the report to the launcher's pipe when this process has one (only the first report of a process is
// sent: later failures are consequences). Best effort: never throws.
void report_failure(const FailureReport& report) noexcept;

}  // namespace lockstep
