// The failure report a worker sends its launcher: the line round-trips every error kind and culprit, malformed
// lines are refused, and only the pipe the variable names (checked by its inode) receives the first report.
#include "lockstep/core/failure_report.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace lockstep {
namespace {

TEST(FailureReport, EveryKindAndCulpritRoundTrips) {
  for (ErrorKind kind : {ErrorKind::kValue, ErrorKind::kDeadlineExceeded, ErrorKind::kUnavailable,
                         ErrorKind::kFailedPrecondition, ErrorKind::kError}) {
    for (std::string culprit : {"", "worker:1", "chief:0"}) {
      const std::optional<FailureReport> back = parse_failure_report(format_failure_report({kind, culprit}));
      ASSERT_TRUE(back.has_value()) << format_failure_report({kind, culprit});
      EXPECT_EQ(back->kind, kind);
      EXPECT_EQ(back->culprit, culprit);
    }
  }
  EXPECT_EQ(format_failure_report({ErrorKind::kUnavailable, "worker:1"}), "kind=UnavailableError culprit=worker:1\n");
}

TEST(FailureReport, OfAnExceptionTakesItsKindAndCulprit) {
  const FailureReport r = failure_report_of(UnavailableError("lost worker:3", Culprit{"worker:3"}));
  EXPECT_EQ(r.kind, ErrorKind::kUnavailable);
  EXPECT_EQ(r.culprit, "worker:3");
  EXPECT_EQ(failure_report_of(std::bad_alloc()).culprit, "");
}

TEST(FailureReport, MalformedLinesAreRefused) {
  for (const char* text : {"", "\n", "kind=UnavailableError", "culprit=worker:1 kind=UnavailableError",
                           "kind=NoSuchError culprit=-", "kind=UnavailableError culprit=", "lockstep: error: worker:1"})
    EXPECT_FALSE(parse_failure_report(text).has_value()) << text;
}

// Runs `body` in a child process with the variable set to `value`; what the child wrote into the pipe.
std::string report_from_child(const std::string& value_suffix, bool right_inode, void (*body)()) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  struct stat st {};
  ::fstat(fds[1], &st);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string value =
        std::to_string(fds[1]) + ":" + std::to_string(right_inode ? st.st_ino : st.st_ino + 1) + value_suffix;
    ::setenv(kFailurePipeVariable, value.c_str(), 1);
    body();
    ::_exit(0);
  }
  ::close(fds[1]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::string text;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  return text;
}

TEST(FailureReport, OnlyTheFirstReportReachesThePipe) {
  const std::string text = report_from_child("", true, [] {
    report_failure({ErrorKind::kUnavailable, "worker:1"});
    report_failure({ErrorKind::kDeadlineExceeded, ""});  // a consequence of the first
  });
  EXPECT_EQ(text, "kind=UnavailableError culprit=worker:1\n");
}

TEST(FailureReport, ADescriptorThatIsNotThePipeIsLeftAlone) {
  EXPECT_EQ(report_from_child("", false, [] { report_failure({ErrorKind::kUnavailable, "worker:1"}); }), "");
  EXPECT_EQ(report_from_child("x", true, [] { report_failure({ErrorKind::kUnavailable, "worker:1"}); }), "");
}

}  // namespace
}  // namespace lockstep
