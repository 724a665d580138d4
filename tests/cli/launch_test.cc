// `lockstep launch` end to end with /bin/sh workers: a TF_CONFIG per worker, prefixed output, the group
// stopped when one worker fails (blaming whom its failure report names, never its log), SIGKILL after the grace
// period, restarts, log files, the launcher's own SIGINT/SIGTERM, and the one-line errors with exit code 2.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "cli_util.h"
#include "lockstep/core/version.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A worker command: /bin/sh sets $i to the worker's index, read from TF_CONFIG's `..."index":<i>}}`, then
// runs `script` (which must not contain single quotes).
std::string worker(const std::string& script) {
  return "/bin/sh -c 'i=${TF_CONFIG##*index?:}; i=${i%%[!0-9]*}; " + script + "'";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A temporary directory removed when the test ends, failed assertions included.
struct TempDir {
  explicit TempDir(const std::string& name) : path(temp_dir(name)) {}
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

TEST(LaunchCli, AllWorkersSucceedEachWithItsTfConfig) {
  Result r = run_lockstep("launch -n 3 -- " + worker("echo \"$TF_CONFIG\"; echo to-stderr-$i >&2"), "", 60);
  ASSERT_EQ(r.code, 0) << r.err;
  json cluster;
  for (int i = 0; i < 3; ++i) {
    const std::string prefix = "[worker " + std::to_string(i) + "] ";
    std::vector<std::string> lines = lines_after(r.out, prefix);
    ASSERT_EQ(lines.size(), 1u) << r.out;
    json config = json::parse(lines[0]);
    EXPECT_EQ(config["task"]["type"], "worker");
    EXPECT_EQ(config["task"]["index"], i);
    if (i == 0) cluster = config["cluster"];
    EXPECT_EQ(config["cluster"], cluster) << "every worker must see the same cluster";
    EXPECT_EQ(lines_after(r.err, prefix), std::vector<std::string>{"to-stderr-" + std::to_string(i)}) << r.err;
  }
  ASSERT_EQ(cluster["worker"].size(), 3u);
  std::set<std::string> ports;
  for (const json& address : cluster["worker"]) {
    const std::string a = address.get<std::string>();
    ASSERT_EQ(a.rfind("127.0.0.1:", 0), 0u) << a;
    ports.insert(a.substr(10));
  }
  EXPECT_EQ(ports.size(), 3u);
}

TEST(LaunchCli, SplitsLinesAtNewlinesAndCarriageReturns) {
  // A progress bar redraws with \r; \r\n is one line end; an empty line stays; an unfinished line is kept.
  Result r = run_lockstep("launch -n 1 -- /bin/sh -c 'printf \"a\\rb\\r\\nc\\n\\nd\"'", "", 60);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "[worker 0] a\n[worker 0] b\n[worker 0] c\n[worker 0] \n[worker 0] d\n");
}

TEST(LaunchCli, LockstepAsTheCommandIsThisBinary) {
  Result r = run_lockstep("launch -n 2 -- lockstep --version", "PATH=/usr/bin:/bin", 60);
  ASSERT_EQ(r.code, 0) << r.err;
  // `lockstep --version` prints the library's version() (lockstep/core/version.h).
  const std::string version = std::string(" lockstep ") + lockstep::version() + "\n";
  EXPECT_TRUE(contains(r.out, "[worker 0]" + version)) << r.out;
  EXPECT_TRUE(contains(r.out, "[worker 1]" + version)) << r.out;
}

TEST(LaunchCli, ThreadsPerWorkerAreCoresOverWorkers) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  const int expected = std::max(1, CPU_COUNT(&set) / 2);
  Result r = run_lockstep("launch -n 2 -- /bin/sh -c 'echo $OMP_NUM_THREADS'", "env -u OMP_NUM_THREADS", 60);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines_after(r.out, "[worker 1] "), std::vector<std::string>{std::to_string(expected)});
  // A value the user set wins.
  r = run_lockstep("launch -n 2 -- /bin/sh -c 'echo $OMP_NUM_THREADS'", "OMP_NUM_THREADS=7", 60);
  EXPECT_EQ(lines_after(r.out, "[worker 0] "), std::vector<std::string>{"7"});
}

// OpenMP's barrier spin is shortened unless the user set it (docs/performance.md says why).
TEST(LaunchCli, OpenMpSpinsBrieflyUnlessTold) {
  Result r = run_lockstep("launch -n 2 -- /bin/sh -c 'echo $GOMP_SPINCOUNT'", "env -u GOMP_SPINCOUNT", 60);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines_after(r.out, "[worker 1] "), std::vector<std::string>{"10000"});
  r = run_lockstep("launch -n 2 -- /bin/sh -c 'echo $GOMP_SPINCOUNT'", "GOMP_SPINCOUNT=300000", 60);
  EXPECT_EQ(lines_after(r.out, "[worker 0] "), std::vector<std::string>{"300000"});
}

// Workers share a fresh random token unless one is given; a --cluster-token-file beats an inherited token.
TEST(LaunchCli, WorkersShareAFreshClusterTokenUnlessOneIsGiven) {
  const std::string show = " -- /bin/sh -c 'echo \"$LOCKSTEP_CLUSTER_TOKEN|$LOCKSTEP_CLUSTER_TOKEN_FILE\"'";
  Result r = run_lockstep("launch -n 2" + show, "env -u LOCKSTEP_CLUSTER_TOKEN -u LOCKSTEP_CLUSTER_TOKEN_FILE", 60);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto w0 = lines_after(r.out, "[worker 0] "), w1 = lines_after(r.out, "[worker 1] ");
  ASSERT_EQ(w0.size(), 1u);
  EXPECT_EQ(w0, w1);
  EXPECT_EQ(w0[0].size(), 64u + 1) << w0[0];  // 32 random bytes in hex, and no file
  EXPECT_EQ(w0[0].find_first_not_of("0123456789abcdef"), 64u) << w0[0];
  Result again = run_lockstep("launch -n 1" + show, "env -u LOCKSTEP_CLUSTER_TOKEN -u LOCKSTEP_CLUSTER_TOKEN_FILE", 60);
  EXPECT_NE(lines_after(again.out, "[worker 0] "), w0);  // a new job, a new token

  r = run_lockstep("launch -n 1" + show, "LOCKSTEP_CLUSTER_TOKEN=mine", 60);
  EXPECT_EQ(lines_after(r.out, "[worker 0] "), std::vector<std::string>{"mine|"});
  r = run_lockstep("launch -n 1 --cluster-token-file /etc/passwd" + show, "LOCKSTEP_CLUSTER_TOKEN=inherited", 60);
  EXPECT_EQ(lines_after(r.out, "[worker 0] "), std::vector<std::string>{"|/etc/passwd"}) << r.err;
}

// The others sleep longer than run_lockstep waits: unless the launcher stops them, `timeout` ends the launcher
// (exit code 124, and a "received SIGTERM" line).
TEST(LaunchCli, OneFailureStopsTheOthersQuickly) {
  Result r = run_lockstep("launch -n 3 -- " + worker("if [ $i = 1 ]; then sleep 0.3; exit 3; fi; sleep 600"), "", 120);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(lines_after(r.err, "lockstep launch: "), std::vector<std::string>{"worker 1 failed with exit code 3"});
}

// Worker 1 sleeps longer than run_lockstep waits: only the SIGKILL ends it in time (else exit code 124).
TEST(LaunchCli, WorkerIgnoringSigtermIsKilledAfterTheGracePeriod) {
  const auto start = Clock::now();
  Result r = run_lockstep("launch -n 2 --grace-period 1 -- " +
                              worker("if [ $i = 0 ]; then sleep 0.5; exit 1; fi; trap \"\" TERM; sleep 600"),
                          "", 120);
  const double took = seconds_since(start);
  EXPECT_EQ(r.code, 1) << r.err;
  // A lower bound, so load cannot break it: 0.5 s until the failure, then the full grace period.
  EXPECT_GE(took, 1.4);
  EXPECT_TRUE(contains(r.err, "lockstep launch: worker 1 did not stop within 1 s of SIGTERM; sending SIGKILL\n"))
      << r.err;
}

// A worker's log is not evidence: worker 0 fails, saying in an error line that it lost worker:1, while worker 1
// runs on. Without a failure report naming worker 1, the launcher blames the worker that failed (reading the
// line, it used to wait for worker 1 and call it lost).
TEST(LaunchCli, AMisleadingLogLineDoesNotMoveTheBlame) {
  Result r = run_lockstep(
      "launch -n 2 -- " +
          worker("if [ $i = 0 ]; then echo \"lockstep: error: gloo all_reduce on worker:0 lost its connection to "
                 "worker:1 (rank 1)\" >&2; exit 1; fi; sleep 600"),
      "", 120);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(lines_after(r.err, "lockstep launch: "), std::vector<std::string>{"worker 0 failed with exit code 1"})
      << r.err;
}

// What does count is the failure report in the pipe the launcher hands each worker: worker 0's blames worker 1
// (which hangs), whatever its log line says (worker:2).
TEST(LaunchCli, TheFailureReportNamesTheCulprit) {
  Result r = run_lockstep(
      "launch -n 3 -- " +
          worker("if [ $i = 0 ]; then "
                 "echo kind=UnavailableError culprit=worker:1 >/proc/self/fd/${LOCKSTEP_FAILURE_PIPE%%:*}; "
                 "echo \"lockstep: error: lost worker:2\" >&2; exit 1; fi; sleep 600"),
      "", 120);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(lines_after(r.err, "lockstep launch: "),
            std::vector<std::string>{"worker 1 was lost (worker 0 exited with code 1 reporting it)"})
      << r.err;
}

TEST(LaunchCli, KilledBySignalGives128PlusTheSignal) {
  Result r = run_lockstep("launch -n 2 -- " + worker("if [ $i = 0 ]; then kill -9 $$; fi; sleep 30"), "", 60);
  EXPECT_EQ(r.code, 128 + 9) << r.err;
  EXPECT_TRUE(contains(r.err, "lockstep launch: worker 0 was killed by signal SIGKILL\n")) << r.err;
}

TEST(LaunchCli, RestartRunsTheGroupAgain) {
  const TempDir temp("launch_restart");
  const fs::path& dir = temp.path;
  // Worker 1 fails on the first attempt only: the marker file remembers that it already failed.
  const std::string cmd = worker("if [ $i = 1 ] && [ ! -e " + (dir / "marker").string() + " ]; then touch " +
                                 (dir / "marker").string() + "; exit 4; fi; echo done-$i");
  Result r = run_lockstep("launch -n 2 --max-restarts 1 -- " + cmd, "", 60);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "lockstep launch: worker 1 failed with exit code 4\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "lockstep launch: restarting the group (attempt 1 of 1)\n")) << r.err;
  EXPECT_EQ(lines_after(r.out, "[worker 1] "), std::vector<std::string>{"done-1"});

  fs::remove(dir / "marker");
  r = run_lockstep("launch -n 2 --max-restarts 0 -- " + cmd, "", 60);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_FALSE(contains(r.err, "restarting")) << r.err;
}

TEST(LaunchCli, RestartsRunOut) {
  Result r =
      run_lockstep("launch -n 2 --max-restarts 2 -- " + worker("if [ $i = 0 ]; then exit 5; fi; sleep 30"), "", 60);
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_EQ(lines_after(r.err, "lockstep launch: restarting the group "),
            (std::vector<std::string>{"(attempt 1 of 2)", "(attempt 2 of 2)"}));
  EXPECT_EQ(lines_after(r.err, "lockstep launch: worker 0 failed").size(), 3u);
}

TEST(LaunchCli, ExitCode2IsNotRestarted) {
  // Exit code 2 is lockstep's "the input is wrong": running the group again cannot help.
  Result r = run_lockstep(
      "launch -n 2 --max-restarts 3 -- " + worker("echo run-$i; if [ $i = 1 ]; then exit 2; fi; sleep 30"), "", 60);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines_after(r.err, "lockstep launch: "),
            std::vector<std::string>{"worker 1 exited with code 2 (a usage or input error); not restarting"});
  EXPECT_EQ(lines_after(r.out, "[worker 1] "), std::vector<std::string>{"run-1"});
}

TEST(LaunchCli, PreemptedGroupsAreRestartedWithoutSpendingATry) {
  // Exit code 75 means the workers saved on a preemption signal: restarted even with --max-restarts 0, twice.
  Result r = run_lockstep("launch -n 2 --max-restarts 0 -- " +
                              worker("echo run-$LOCKSTEP_RESTART_COUNT; [ $LOCKSTEP_RESTART_COUNT -ge 2 ] && exit 0; "
                                     "[ $i = 0 ] && exit 75; sleep 30"),
                          "", 60);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines_after(r.out, "[worker 0] "), (std::vector<std::string>{"run-0", "run-1", "run-2"}));
  const std::vector<std::string> said = lines_after(r.err, "lockstep launch: ");
  ASSERT_FALSE(said.empty()) << r.err;
  EXPECT_NE(said.front().find("was preempted and saved (exit code 75)"), std::string::npos) << r.err;
  EXPECT_EQ(said.back(), "finished after 2 restarts") << r.err;
}

TEST(LaunchCli, RestartsAreCountedInTheWorkersEnvironmentAndTheLastLine) {
  const TempDir temp("launch_restart_count");
  const fs::path& dir = temp.path;
  const std::string marker = (dir / "marker").string();
  const std::string said0 = (dir / "worker0-said").string();
  // Worker 1 fails the first run only after worker 0 has said its line (waiting at most 10 s), or the launcher could
  // stop worker 0 before it says anything.
  const std::string cmd = worker("echo restart-$LOCKSTEP_RESTART_COUNT; [ $i = 0 ] && touch " + said0 +
                                 "; if [ $i = 1 ] && [ ! -e " + marker + " ]; then n=0; while [ ! -e " + said0 +
                                 " ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done; touch " + marker +
                                 "; exit 4; fi; true");
  // A value inherited from the launcher's own environment is replaced.
  Result r = run_lockstep("launch -n 2 --max-restarts 2 -- " + cmd, "LOCKSTEP_RESTART_COUNT=9", 60);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines_after(r.out, "[worker 0] "), (std::vector<std::string>{"restart-0", "restart-1"}));
  const std::vector<std::string> said = lines_after(r.err, "lockstep launch: ");
  ASSERT_FALSE(said.empty()) << r.err;
  EXPECT_EQ(said.back(), "finished after 1 restart") << r.err;

  // A group that fails every time ends with the count too; without a restart there is no such line.
  r = run_lockstep("launch -n 2 --max-restarts 2 -- " + worker("exit 3"), "", 60);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_EQ(lines_after(r.err, "lockstep launch: ").back(), "failed after 2 restarts") << r.err;
  r = run_lockstep("launch -n 2 -- " + worker("exit 0"), "", 60);
  EXPECT_EQ(r.err, "");
}

TEST(LaunchCli, LogWriteErrorIsOneLineAndFailsTheLauncherButNotTheJob) {
  // worker-0.log on a full disk: /dev/full fails every write with ENOSPC.
  const TempDir temp("launch_log_full");
  const fs::path& dir = temp.path;
  fs::create_symlink("/dev/full", dir / "worker-0.log");
  Result r = run_lockstep("launch -n 2 --log-dir " + dir.string() + " -- " + worker("echo a-$i; echo b-$i; echo c-$i"),
                          "", 60);
  EXPECT_EQ(r.code, 1) << r.err;
  const std::vector<std::string> said = lines_after(r.err, "lockstep launch: ");
  ASSERT_EQ(said.size(), 1u) << r.err;
  EXPECT_TRUE(contains(said[0], (dir / "worker-0.log").string() + ": No space left on device")) << said[0];
  // The workers ran to the end and their output still reached the terminal.
  EXPECT_EQ(lines_after(r.out, "[worker 0] "), (std::vector<std::string>{"a-0", "b-0", "c-0"}));
  EXPECT_EQ(read_all((dir / "worker-1.log").string()), "a-1\nb-1\nc-1\n");
}

TEST(LaunchCli, LogDirHoldsEachWorkersOutputUnprefixed) {
  const TempDir temp("launch_logs");
  const fs::path dir = temp.path / "logs";
  Result r =
      run_lockstep("launch -n 2 --log-dir " + dir.string() + " -- " + worker("echo out-$i; echo err-$i >&2"), "", 60);
  ASSERT_EQ(r.code, 0) << r.err;
  for (int i = 0; i < 2; ++i) {
    const std::string log = read_all((dir / ("worker-" + std::to_string(i) + ".log")).string());
    const std::string n = std::to_string(i);
    EXPECT_TRUE(contains(log, "out-" + n + "\n")) << log;
    EXPECT_TRUE(contains(log, "err-" + n + "\n")) << log;
    EXPECT_FALSE(contains(log, "[worker")) << log;
    EXPECT_EQ(count_lines(log), 2u) << log;
  }
}

// Every user mistake: exit code 2, nothing on stdout and one line on stderr that names the problem.
struct BadLaunch {
  std::string name, args, must_mention;
};

class LaunchCliErrors : public ::testing::TestWithParam<BadLaunch> {};

TEST_P(LaunchCliErrors, OneLineAndExitCode2) {
  const BadLaunch& bad = GetParam();
  Result r = run_lockstep("launch " + bad.args, "", 60);  // a hang ends in exit code 124
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, bad.must_mention)) << r.err;
  EXPECT_EQ(r.out, "");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, LaunchCliErrors,
    ::testing::Values(BadLaunch{"NoWorkers", "-n 0 -- true", "at least 1, got 0"},
                      BadLaunch{"NoCommand", "-n 2", "command"},
                      BadLaunch{"CommandNotInPath", "-n 2 -- no-such-lockstep-command --flag",
                                "lockstep: error: cannot run 'no-such-lockstep-command': No such file or directory"},
                      BadLaunch{"MissingFile", "-n 2 -- /nonexistent/worker", "cannot run '/nonexistent/worker'"},
                      // Passes the access() check but not execve: the child reports its errno through a pipe.
                      BadLaunch{"ExecFails", "-n 2 -- /", "lockstep launch: cannot run '/': Permission denied"},
                      BadLaunch{"BadHost", "-n 2 --host 192.0.2.1 -- true", "not an address of this machine"},
                      BadLaunch{"NegativeGrace", "-n 2 --grace-period -1 -- true", "--grace-period"}),
    [](const ::testing::TestParamInfo<BadLaunch>& info) { return info.param.name; });

// The launcher itself gets SIGINT or SIGTERM: it passes SIGTERM on, SIGKILLs what ignores it, and exits
// 128 + the signal without leaving any worker behind.
class LaunchCliSignals : public ::testing::TestWithParam<int> {};

TEST_P(LaunchCliSignals, StopsEveryWorkerAndExits128PlusTheSignal) {
  const int sig = GetParam();
  const TempDir temp("launch_signal");
  const fs::path& dir = temp.path;
  const char* bin = std::getenv("LOCKSTEP_BIN_DIR");
  const std::string lockstep = std::string(bin ? bin : LOCKSTEP_BIN_DIR) + "/lockstep";
  // Worker 1 ignores SIGTERM, so only the SIGKILL after the grace period ends it: it sleeps longer than the
  // test waits for the launcher.
  const std::string script = "i=${TF_CONFIG##*index?:}; i=${i%%[!0-9]*}; [ $i = 1 ] && trap \"\" TERM; echo $$ > " +
                             dir.string() + "/pid-$i; exec sleep 600";
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    const std::string err = (dir / "err").string();
    if (!freopen(err.c_str(), "w", stderr) || !freopen("/dev/null", "w", stdout)) _exit(99);
    execl(lockstep.c_str(), "lockstep", "launch", "-n", "2", "--grace-period", "1", "--", "/bin/sh", "-c",
          script.c_str(), static_cast<char*>(nullptr));
    _exit(98);
  }
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!(fs::exists(dir / "pid-0") && fs::exists(dir / "pid-1") && fs::file_size(dir / "pid-1") > 0) &&
         Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let `exec sleep` happen
  const auto start = Clock::now();
  kill(launcher, sig);
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(launcher, &status, WNOHANG)) == 0 && seconds_since(start) < 60)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (done == 0) {
    kill(launcher, SIGKILL);
    waitpid(launcher, &status, 0);
    FAIL() << "the launcher did not exit within 60 s of " << strsignal(sig);
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
  const std::string err = read_all((dir / "err").string());
  EXPECT_TRUE(contains(err, "lockstep launch: received " + std::string(sig == SIGINT ? "SIGINT" : "SIGTERM"))) << err;
  EXPECT_TRUE(contains(err, "lockstep launch: worker 1 did not stop within 1 s of SIGTERM; sending SIGKILL\n")) << err;
  for (int i = 0; i < 2; ++i) {
    const pid_t pid = std::stoi(read_all((dir / ("pid-" + std::to_string(i))).string()));
    EXPECT_NE(kill(pid, 0), 0) << "worker " << i << " (pid " << pid << ") is still running";
    if (kill(pid, 0) == 0) kill(pid, SIGKILL);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LaunchCliSignals, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(info.param == SIGINT ? "SIGINT" : "SIGTERM");
                         });

}  // namespace
}  // namespace lockstep::testing
