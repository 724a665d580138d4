// The failure report: its one-line format, and its delivery through the pipe the launcher handed down.
#include "lockstep/core/failure_report.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>

namespace lockstep {
namespace {

constexpr std::string_view kKind = "kind=", kCulprit = "culprit=", kNobody = "-";

// The kinds a report can name, with the names they are written under.
constexpr ErrorKind kKinds[] = {ErrorKind::kValue,
                                ErrorKind::kInvalidArgument,
                                ErrorKind::kNotFound,
                                ErrorKind::kDataLoss,
                                ErrorKind::kRuntime,
                                ErrorKind::kDeadlineExceeded,
                                ErrorKind::kUnavailable,
                                ErrorKind::kAlreadyExists,
                                ErrorKind::kPermissionDenied,
                                ErrorKind::kFailedPrecondition,
                                ErrorKind::kError};

bool parse_number(std::string_view text, auto& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

// The descriptor named by kFailurePipeVariable, if it is still that pipe; -1 otherwise.
int launcher_pipe() {
  const char* value = std::getenv(kFailurePipeVariable);
  if (value == nullptr) return -1;
  const std::string_view text(value);
  const size_t colon = text.find(':');
  int fd = -1;
  ino_t inode = 0;
  if (colon == std::string_view::npos || !parse_number(text.substr(0, colon), fd) ||
      !parse_number(text.substr(colon + 1), inode))
    return -1;
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_ino != inode) return -1;
  return fd;
}

}  // namespace

std::string format_failure_report(const FailureReport& report) {
  std::string line(kKind);
  line += error_kind_name(report.kind);
  line += ' ';
  line += kCulprit;
  line += report.culprit.empty() ? kNobody : std::string_view(report.culprit);
  line += '\n';
  return line;
}

std::optional<ErrorKind> reportable_kind(std::string_view name) {
  const auto* known =
      std::find_if(std::begin(kKinds), std::end(kKinds), [&](ErrorKind k) { return name == error_kind_name(k); });
  if (known == std::end(kKinds)) return std::nullopt;
  return *known;
}

std::optional<FailureReport> parse_failure_report(std::string_view text) {
  const std::string_view line = text.substr(0, text.find('\n'));
  const size_t space = line.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const std::string_view kind = line.substr(0, space), culprit = line.substr(space + 1);
  if (!kind.starts_with(kKind) || !culprit.starts_with(kCulprit)) return std::nullopt;
  FailureReport report;
  const std::optional<ErrorKind> known = reportable_kind(kind.substr(kKind.size()));
  if (!known) return std::nullopt;
  report.kind = *known;
  const std::string_view task = culprit.substr(kCulprit.size());
  if (task.empty() || task.find(' ') != std::string_view::npos) return std::nullopt;
  if (task != kNobody) report.culprit = task;
  return report;
}

FailureReport failure_report_of(const std::exception& e) {
  return {error_kind(e), culprit_of(e)};
}

void report_failure(const FailureReport& report) noexcept {
  static std::atomic<bool> sent{false};
  try {
    const int fd = launcher_pipe();
    if (fd < 0 || sent.exchange(true)) return;
    const std::string line = format_failure_report(report);  // far below PIPE_BUF: one write, never torn
    ssize_t n;
    do n = ::write(fd, line.data(), line.size());
    while (n < 0 && errno == EINTR);
  } catch (...) {
    // Out of memory while failing: the launcher then blames the worker itself, as for one without a report.
  }
}

}  // namespace lockstep
