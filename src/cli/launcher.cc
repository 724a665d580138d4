// The local launcher: free ports, one TF_CONFIG per worker, fork/exec into one process group per worker,
// output prefixed line by line from pipes read with poll(), and the group stopped (SIGTERM, then SIGKILL
// after a grace period) and restarted when a worker fails, naming the worker whose loss started it (from how
// each worker ended and the failure report it left in its pipe, never from its log).
#include "launcher.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "lockstep/core/error.h"
#include "lockstep/core/failure_report.h"
#include "lockstep/train/preemption.h"

extern char** environ;

namespace lockstep::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxLine = 64 * 1024;                   // longer output without a line end is cut here
constexpr auto kDrainTimeout = std::chrono::seconds(1);  // a worker's own child may hold its pipe open
constexpr auto kReapTimeout = std::chrono::seconds(5);   // after SIGKILL only a process stuck in the kernel lingers
// How long a worker that another worker's failure report blames may take to exit by itself, so that the launcher
// reports its own status (an input error is not restarted) rather than only that it was lost.
constexpr auto kSettleTimeout = std::chrono::seconds(1);
constexpr int kInputErrorCode = 2;  // lockstep's "the input is wrong": running the group again cannot help
constexpr const char* kRestartCountVariable = "LOCKSTEP_RESTART_COUNT";
constexpr auto kPreemptionBackoff = std::chrono::milliseconds(500);  // before restarting a preempted group
constexpr int kMaxWorkers = 4096;  // each holds a port, pipes and a process: more would exhaust the host first

// Anything that stops the launcher before or while starting workers: a user error, which main() prints as
// the one line "lockstep: error: ..." with exit code 2, like every other subcommand's.
class LaunchError : public ValueError {
 public:
  using ValueError::ValueError;
};

std::string errno_text(int err) {
  return std::strerror(err);
}

// An owned file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    reset(std::exchange(other.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Writes everything, or returns false with errno set. For the launcher's own stdout and stderr a failure
// is ignored: the reader is gone (EPIPE: SIGPIPE is ignored while launching), the output is dropped and the
// workers keep running.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) {
      errno = EIO;
      return false;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void say(const std::string& line) {
  write_all(STDERR_FILENO, "lockstep launch: " + line + "\n");
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

// ---- signals ------------------------------------------------------------------------------------------

// The handler records the signal and writes a byte to a pipe that the poll loop watches, so a child's exit
// or a Ctrl-C that lands between a check and the next poll() still wakes it.
int g_wake_pipe[2] = {-1, -1};
volatile sig_atomic_t g_stop_signal = 0;  // the first SIGINT/SIGTERM the launcher received
volatile sig_atomic_t g_stop_count = 0;

void on_signal(int sig) {
  const int saved = errno;
  if (sig != SIGCHLD) {
    if (!g_stop_signal) g_stop_signal = sig;
    g_stop_count = g_stop_count + 1;
  }
  const char byte = 0;
  [[maybe_unused]] const ssize_t n = ::write(g_wake_pipe[1], &byte, 1);
  errno = saved;
}

// Installs the handlers for the launcher's lifetime and puts the previous ones back afterwards, so that
// `lockstep train --workers` returns to a process in its original state.
class SignalHandlers {
 public:
  SignalHandlers() {
    if (::pipe2(g_wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
      throw LaunchError("cannot create a pipe: " + errno_text(errno));
    g_stop_signal = 0;
    g_stop_count = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    for (size_t i = 0; i < kCaught.size(); ++i) ::sigaction(kCaught[i], &sa, &old_[i]);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old_pipe_);
  }
  ~SignalHandlers() {
    for (size_t i = 0; i < kCaught.size(); ++i) ::sigaction(kCaught[i], &old_[i], nullptr);
    ::sigaction(SIGPIPE, &old_pipe_, nullptr);
    for (int& fd : g_wake_pipe) {
      ::close(fd);
      fd = -1;
    }
  }
  SignalHandlers(const SignalHandlers&) = delete;
  SignalHandlers& operator=(const SignalHandlers&) = delete;

  // Signals that the launcher resets to their defaults in a child before exec.
  static constexpr std::array<int, 4> kReset = {SIGINT, SIGTERM, SIGCHLD, SIGPIPE};

 private:
  static constexpr std::array<int, 3> kCaught = {SIGINT, SIGTERM, SIGCHLD};
  std::array<struct sigaction, 3> old_{};
  struct sigaction old_pipe_ {};
};

void drain_wake_pipe() {
  char buf[64];
  while (::read(g_wake_pipe[0], buf, sizeof buf) > 0) {
  }
}

// ---- what every worker runs ---------------------------------------------------------------------------

int usable_cores() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The file execve() gets: "lockstep" is this very binary (the same version, found even when it is not in
// PATH), a name with a slash is used as is, anything else is looked up in PATH like a shell would.
std::string find_executable(const std::string& name) {
  if (name == "lockstep") {
    std::error_code ec;
    auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) return self.string();
  }
  if (name.empty()) throw LaunchError("cannot run '': the command is empty");
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) != 0) throw LaunchError("cannot run '" + name + "': " + errno_text(errno));
    return name;
  }
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  int err = ENOENT;
  for (size_t begin = 0; begin <= path.size();) {
    size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end == begin ? "." : path.substr(begin, end - begin);
    const std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      err = EACCES;
    }
    begin = end + 1;
  }
  throw LaunchError("cannot run '" + name + "': " + errno_text(err));
}

// 32 bytes from the kernel's random source, in hex.
std::string random_token() {
  unsigned char bytes[32];
  LS_CHECK(::getrandom(bytes, sizeof bytes, 0) == static_cast<ssize_t>(sizeof bytes), RuntimeError,
           "getrandom failed: ", std::strerror(errno));
  std::string hex;
  for (unsigned char b : bytes) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
  return hex;
}

// The launcher's environment without TF_CONFIG and LOCKSTEP_RESTART_COUNT, plus extra_env, plus
// OMP_NUM_THREADS = cores / workers unless it is already set, so that N workers on one host do not each
// start a thread per core, plus GOMP_SPINCOUNT=10000 unless set (an OpenMP team that spins 300000 turns at a
// barrier waits far longer when another process holds a core: docs/performance.md), plus a fresh
// LOCKSTEP_CLUSTER_TOKEN unless a token is given, so that only this job's workers can join it.
std::vector<std::string> worker_environment(const LaunchOptions& o) {
  std::vector<std::string> env;
  bool has_threads = o.extra_env.count("OMP_NUM_THREADS") > 0, has_spin = o.extra_env.count("GOMP_SPINCOUNT") > 0;
  bool has_token = o.extra_env.count("LOCKSTEP_CLUSTER_TOKEN") + o.extra_env.count("LOCKSTEP_CLUSTER_TOKEN_FILE") > 0;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const std::string name(entry.substr(0, entry.find('=')));
    if (name == "TF_CONFIG" || name == kRestartCountVariable || name == kFailurePipeVariable || o.extra_env.count(name))
      continue;
    // A token file given to the launcher wins over a token inherited from its environment.
    if (name == "LOCKSTEP_CLUSTER_TOKEN" && o.extra_env.count("LOCKSTEP_CLUSTER_TOKEN_FILE")) continue;
    has_threads |= name == "OMP_NUM_THREADS";
    has_spin |= name == "GOMP_SPINCOUNT";
    has_token |= name == "LOCKSTEP_CLUSTER_TOKEN" || name == "LOCKSTEP_CLUSTER_TOKEN_FILE";
    env.emplace_back(entry);
  }
  for (const auto& [name, value] : o.extra_env)
    if (name != "TF_CONFIG" && name != kRestartCountVariable && name != kFailurePipeVariable)
      env.push_back(name + "=" + value);
  if (!has_threads) env.push_back("OMP_NUM_THREADS=" + std::to_string(std::max(1, usable_cores() / o.num_workers)));
  if (!has_spin) env.push_back("GOMP_SPINCOUNT=10000");
  if (!has_token) env.push_back("LOCKSTEP_CLUSTER_TOKEN=" + random_token());
  return env;
}

struct Program {
  std::string path;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // without TF_CONFIG, the restart count and the failure pipe, which differ per
                                 // worker and run
};

// ---- ports and TF_CONFIG ------------------------------------------------------------------------------

// N distinct free TCP ports on `host`: each probe socket stays bound until all are found, so the kernel
// cannot hand out the same port twice. Another process may still take one before the worker binds it;
// that shows as a worker failure, and a restart picks new ports.
std::vector<int> pick_ports(const std::string& host, int n, int start_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), "0", &hints, &found); rc != 0)
    throw LaunchError("cannot resolve --host '" + host + "': " + ::gai_strerror(rc));
  sockaddr_storage addr{};
  const socklen_t addr_len = found->ai_addrlen;
  std::memcpy(&addr, found->ai_addr, addr_len);
  ::freeaddrinfo(found);

  auto set_port = [&](int port) {
    const auto p = htons(static_cast<uint16_t>(port));
    if (addr.ss_family == AF_INET6)
      reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port = p;
    else
      reinterpret_cast<sockaddr_in*>(&addr)->sin_port = p;
  };
  std::vector<Fd> held;
  std::vector<int> ports;
  auto try_bind = [&](int port) {
    Fd s(::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s) throw LaunchError("cannot open a socket: " + errno_text(errno));
    set_port(port);
    if (::bind(s.get(), reinterpret_cast<sockaddr*>(&addr), addr_len) != 0) {
      if (errno == EADDRNOTAVAIL) throw LaunchError("--host '" + host + "' is not an address of this machine");
      return;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&bound), &len);
    ports.push_back(ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&bound)->sin_port));
    held.push_back(std::move(s));
  };
  if (start_port == 0) {
    for (int i = 0; i < n; ++i) try_bind(0);
  } else {
    for (int p = start_port; p <= 65535 && static_cast<int>(ports.size()) < n; ++p) try_bind(p);
  }
  if (static_cast<int>(ports.size()) < n)
    throw LaunchError(make_message("found only ", ports.size(), " free TCP ports on ", host, " from port ", start_port,
                                   " up, but ", n, " workers need one each"));
  return ports;
}

std::string tf_config(const std::vector<std::string>& workers, int index) {
  nlohmann::ordered_json j;
  j["cluster"]["worker"] = workers;
  j["task"] = {{"type", "worker"}, {"index", index}};
  return j.dump();
}

// ---- output -------------------------------------------------------------------------------------------

// Splits a byte stream into lines at \n, \r\n and \r (progress bars redraw with \r), keeping a partial
// line until its end arrives. A \r that ends nothing (a redraw starting with \r) yields no empty line.
class LineSplitter {
 public:
  template <typename Emit>
  void feed(std::string_view data, Emit&& emit) {
    for (const char c : data) {
      if (c == '\n') {
        if (!(after_cr_ && partial_.empty())) emit(std::string_view(partial_));
        partial_.clear();
        after_cr_ = false;
      } else if (c == '\r') {
        if (!partial_.empty()) emit(std::string_view(partial_));
        partial_.clear();
        after_cr_ = true;
      } else {
        partial_ += c;
        after_cr_ = false;
        if (partial_.size() >= kMaxLine) {
          emit(std::string_view(partial_));
          partial_.clear();
        }
      }
    }
  }
  template <typename Emit>
  void finish(Emit&& emit) {
    if (!partial_.empty()) emit(std::string_view(partial_));
    partial_.clear();
  }

 private:
  std::string partial_;
  bool after_cr_ = false;
};

// worker-<i>.log per worker, truncated when the launcher starts and appended to across restarts. A file
// that cannot be written (a full disk) is closed and the first such error is said once; the workers keep
// running, since a job is worth more than its log, and close() makes the launcher's exit status non-zero.
class LogFiles {
 public:
  LogFiles(const std::string& dir, int n) {
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw LaunchError("cannot create --log-dir '" + dir + "': " + ec.message());
    for (int i = 0; i < n; ++i) {
      paths_.push_back(dir + "/worker-" + std::to_string(i) + ".log");
      Fd fd(::open(paths_.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
      if (!fd) throw LaunchError("cannot write the log file " + paths_.back() + ": " + errno_text(errno));
      files_.push_back(std::move(fd));
    }
  }
  void write(int worker, std::string_view line) {
    const auto i = static_cast<size_t>(worker);
    if (i >= files_.size() || !files_[i]) return;
    std::string text(line);
    text += '\n';
    if (!write_all(files_[i].get(), text)) fail(i, errno);
  }
  void write_all_workers(std::string_view line) {
    for (size_t i = 0; i < files_.size(); ++i) write(static_cast<int>(i), line);
  }
  // Closes every file, checking the close (where a delayed write error shows); true when all was written.
  bool close() {
    for (size_t i = 0; i < files_.size(); ++i)
      if (files_[i] && ::close(files_[i].release()) != 0) fail(i, errno);
    return !failed_;
  }

 private:
  void fail(size_t i, int err) {
    files_[i].reset();
    if (!failed_)
      say("cannot write the log file " + paths_[i] + ": " + errno_text(err) +
          " (the workers keep running; the logs stay incomplete and the launcher will exit non-zero)");
    failed_ = true;
  }

  std::vector<std::string> paths_;
  std::vector<Fd> files_;
  bool failed_ = false;
};

// ---- one run of the group -----------------------------------------------------------------------------

struct Outcome {
  int code = 0;
  bool restartable = false;  // a worker failed; exec failures and the launcher's own stop are final
  bool preempted = false;    // the workers saved on a preemption signal: restarted without spending a try
};

struct Stream {
  Fd fd;       // read end of the worker's stdout or stderr; closed at end of file
  int out_fd;  // the launcher's stdout or stderr
  LineSplitter lines;
};

struct Worker {
  pid_t pid = -1;  // also the id of its process group
  bool running = false;
  int named = -1;  // the other worker that this one's failure report blames
  std::array<Stream, 2> streams{Stream{{}, STDOUT_FILENO, {}}, Stream{{}, STDERR_FILENO, {}}};
  Fd report;  // read end of the pipe the worker's failure report arrives in (lockstep/core/failure_report.h)
};

// A worker that ended, with its exit code (128 + n for signal n).
struct Exit {
  size_t worker;
  int status;
  int code;
};

// The worker (of n) that a failure report's culprit names, when it is one of the others: under the launcher the
// task names are "worker:<launcher's index>". -1 otherwise.
int worker_blamed(const FailureReport& report, size_t self, size_t n) {
  for (size_t j = 0; j < n; ++j)
    if (j != self && report.culprit == "worker:" + std::to_string(j)) return static_cast<int>(j);
  return -1;
}

class Group {
 public:
  // `attempt`: 0 for the first run of the group, k for its k-th restart; `restarts_left`: whether a failure
  // would be followed by a restart.
  Group(const LaunchOptions& o, const Program& program, LogFiles& logs, int attempt, bool restarts_left)
      : o_(o),
        program_(program),
        logs_(logs),
        attempt_(attempt),
        restarts_left_(restarts_left),
        workers_(static_cast<size_t>(o.num_workers)) {}

  Outcome run(const std::vector<int>& ports) {
    std::vector<std::string> cluster;
    const bool v6 = o_.host.find(':') != std::string::npos;
    for (int p : ports) cluster.push_back((v6 ? "[" + o_.host + "]" : o_.host) + ":" + std::to_string(p));
    for (int i = 0; i < o_.num_workers && !stopping_ && !g_stop_signal; ++i) start(i, tf_config(cluster, i));
    pump();
    return outcome_;
  }

 private:
  void start(int i, const std::string& config) {
    Worker& w = workers_[static_cast<size_t>(i)];
    std::vector<std::string> env = program_.env;
    env.push_back("TF_CONFIG=" + config);
    env.push_back(std::string(kRestartCountVariable) + "=" + std::to_string(attempt_));
    auto pointers = [](std::vector<std::string>& v) {
      std::vector<char*> p;
      for (std::string& s : v) p.push_back(s.data());
      p.push_back(nullptr);
      return p;
    };
    int out[2], err[2], status[2], report[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return fail_to_start(i, errno);
    Fd out_r(out[0]), out_w(out[1]);
    if (::pipe2(err, O_CLOEXEC) != 0) return fail_to_start(i, errno);
    Fd err_r(err[0]), err_w(err[1]);
    // Close-on-exec like the others, so that no other worker inherits it; this worker's child clears the flag.
    if (::pipe2(report, O_CLOEXEC | O_NONBLOCK) != 0) return fail_to_start(i, errno);
    Fd report_r(report[0]), report_w(report[1]);
    struct stat report_stat {};
    if (::fstat(report_w.get(), &report_stat) != 0) return fail_to_start(i, errno);
    env.push_back(make_message(kFailurePipeVariable, "=", report_w.get(), ":", report_stat.st_ino));
    std::vector<std::string> args = program_.argv;
    std::vector<char*> argv = pointers(args), envp = pointers(env);
    // Closed by a successful exec; otherwise the child writes its errno here.
    if (::pipe2(status, O_CLOEXEC) != 0) return fail_to_start(i, errno);
    Fd status_r(status[0]), status_w(status[1]);
    Fd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));

    // Blocked around fork so the child cannot run the launcher's handler before it resets them.
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &old);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
      // Only async-signal-safe calls from here to exec.
      ::setpgid(0, 0);  // its own group: the terminal's Ctrl-C reaches the launcher only, which decides
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a launcher killed with -9 still takes its workers down
      if (::getppid() != parent) ::_exit(127);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      for (int sig : SignalHandlers::kReset) ::sigaction(sig, &dfl, nullptr);
      if (null) ::dup2(null.get(), STDIN_FILENO);
      ::dup2(out_w.get(), STDOUT_FILENO);
      ::dup2(err_w.get(), STDERR_FILENO);
      ::fcntl(report_w.get(), F_SETFD, 0);
      ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
      ::execve(program_.path.c_str(), argv.data(), envp.data());
      const int e = errno;
      [[maybe_unused]] const ssize_t n = ::write(status_w.get(), &e, sizeof e);
      ::_exit(127);
    }
    const int fork_errno = errno;
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (pid < 0) return fail_to_start(i, fork_errno);
    ::setpgid(pid, pid);  // in the parent too, so the group exists before any kill(-pid); EACCES after exec
    status_w.reset();
    out_w.reset();
    err_w.reset();
    report_w.reset();
    int child_errno = 0;
    ssize_t n;
    do n = ::read(status_r.get(), &child_errno, sizeof child_errno);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
      ::waitpid(pid, nullptr, 0);  // it has already called _exit
      say("cannot run '" + program_.argv[0] + "': " + errno_text(child_errno));
      outcome_ = {2, false};
      return stop(SIGTERM);
    }
    w.pid = pid;
    w.running = true;
    ::fcntl(out_r.get(), F_SETFL, O_NONBLOCK);
    ::fcntl(err_r.get(), F_SETFL, O_NONBLOCK);
    w.streams[0].fd = std::move(out_r);
    w.streams[1].fd = std::move(err_r);
    w.report = std::move(report_r);
    w.named = -1;
  }

  void fail_to_start(int i, int err) {
    say(make_message("cannot start worker ", i, ": ", errno_text(err)));
    outcome_ = {2, false};
    stop(SIGTERM);
  }

  // SIGTERM starts the stop of every group (including a failed worker's, which may have left children),
  // and SIGKILL follows after the grace period.
  void stop(int sig) {
    if (sig == SIGTERM) {
      if (stopping_) return;
      stopping_ = true;
      // Capped so that the conversion to the clock's integer nanoseconds cannot overflow.
      const std::chrono::duration<double> grace(std::min(o_.grace_period_s, 1e8));
      kill_at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(grace);
    } else {
      if (killed_) return;
      killed_ = true;
      give_up_at_ = Clock::now() + kReapTimeout;
      std::string late;
      for (size_t i = 0; i < workers_.size(); ++i)
        if (workers_[i].running) late += (late.empty() ? "" : ", ") + std::to_string(i);
      if (!late.empty())
        say(make_message("worker", late.find(',') == std::string::npos ? " " : "s ", late, " did not stop within ",
                         o_.grace_period_s, " s of SIGTERM; sending SIGKILL"));
    }
    for (const Worker& w : workers_)
      if (w.pid > 0) ::kill(-w.pid, sig);
  }

  // Reaps the workers that ended, reading what they left in their pipes first, and on the group's first
  // failure reports the worker whose loss started it (see blame()) and stops the group.
  void reap() {
    std::vector<Exit> ended;
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (!w.running) continue;
      int status = 0;
      const pid_t r = ::waitpid(w.pid, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) continue;
      w.running = false;
      if (r < 0) continue;  // not ours any more (someone else reaped it); nothing to report
      drain(i);
      read_report(i);
      ended.push_back({i, status, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)});
    }
    if (stopping_) return;
    if (suspect_) {
      for (const Exit& e : ended)
        if (e.worker == *suspect_) report(culprit(*first_failure_, e));
      return;
    }
    std::vector<Exit> failed;
    std::copy_if(ended.begin(), ended.end(), std::back_inserter(failed), [](const Exit& e) { return e.code != 0; });
    if (!failed.empty()) blame(failed);
  }

  // The worker whose loss started a failure. Its peers notice the loss within milliseconds and exit too,
  // often before the launcher looks, so the first to be reaped proves nothing. A worker killed by a signal
  // was killed, not told to exit; otherwise a worker whose failure report blames another worker (worker:1
  // sent no heartbeat, closed its connection) points at that one, whose own exit then decides (see culprit()).
  // A named worker that is still running gets kSettleTimeout to exit; after that it counts as lost (it hangs).
  void blame(const std::vector<Exit>& failed) {
    const auto killed = std::find_if(failed.begin(), failed.end(), [](const Exit& e) { return WIFSIGNALED(e.status); });
    if (killed != failed.end()) return report(*killed);
    const Exit& first = failed.front();
    const int named = workers_[first.worker].named;
    if (named < 0) return report(first);
    const auto other = std::find_if(failed.begin(), failed.end(),
                                    [&](const Exit& e) { return e.worker == static_cast<size_t>(named); });
    if (other != failed.end()) return report(culprit(first, *other));
    if (!workers_[static_cast<size_t>(named)].running) return report(first);  // it had already finished
    suspect_ = static_cast<size_t>(named);
    first_failure_ = first;
    settle_until_ = Clock::now() + kSettleTimeout;
  }

  // Of `first`, which named the worker of `named`, and that worker's exit: the one to report. The named one,
  // unless it succeeded or names `first` back (two workers refusing each other's configuration).
  const Exit& culprit(const Exit& first, const Exit& named) const {
    if (WIFSIGNALED(named.status)) return named;
    if (named.code == 0 || workers_[named.worker].named == static_cast<int>(first.worker)) return first;
    return named;
  }

  void report(const Exit& e) {
    const size_t i = e.worker;
    if (WIFSIGNALED(e.status))
      say(make_message("worker ", i, " was killed by signal ", signal_name(WTERMSIG(e.status))));
    else if (e.code == kInputErrorCode)
      say(make_message("worker ", i, " exited with code 2 (a usage or input error)",
                       restarts_left_ ? "; not restarting" : ""));
    else if (e.code == train::kPreemptedExitCode)
      say(make_message("worker ", i, " was preempted and saved (exit code ", e.code, "); restarting the group"));
    else
      say(make_message("worker ", i, " failed with exit code ", e.code));
    outcome_ = {e.code, e.code != kInputErrorCode, e.code == train::kPreemptedExitCode};
    stop(SIGTERM);
  }

  // The suspect did not exit by itself in time: it hangs, or its host is gone.
  void check_suspect() {
    if (!suspect_ || stopping_ || Clock::now() < settle_until_) return;
    say(make_message("worker ", *suspect_, " was lost (worker ", first_failure_->worker, " exited with code ",
                     first_failure_->code, " reporting it)"));
    outcome_ = {first_failure_->code, true};
    stop(SIGTERM);
  }

  void check_launcher_signals() {
    if (g_stop_signal && !interrupted_) {
      interrupted_ = true;
      outcome_ = {128 + g_stop_signal, false};
      say("received " + signal_name(g_stop_signal) + "; stopping the workers");
      stop(SIGTERM);
    }
    if (g_stop_count >= 2) stop(SIGKILL);  // a second Ctrl-C does not wait out the grace period
  }

  void emit(size_t i, size_t stream, std::string_view line) {
    Worker& w = workers_[i];
    std::string text = "[worker " + std::to_string(i) + "] ";
    text.append(line);
    text += '\n';
    write_all(w.streams[stream].out_fd, text);
    logs_.write(static_cast<int>(i), line);
  }

  void close_stream(size_t i, size_t s) {
    Stream& st = workers_[i].streams[s];
    st.lines.finish([&](std::string_view line) { emit(i, s, line); });
    st.fd.reset();
  }

  // One read from a worker's pipe; false when there was nothing to read or the stream ended.
  bool read_stream(size_t i, size_t s) {
    Stream& st = workers_[i].streams[s];
    if (!st.fd) return false;
    char buf[65536];
    const ssize_t n = ::read(st.fd.get(), buf, sizeof buf);
    if (n > 0) {
      st.lines.feed(std::string_view(buf, static_cast<size_t>(n)), [&](std::string_view line) { emit(i, s, line); });
      return true;
    }
    if (n == 0 || (errno != EAGAIN && errno != EINTR)) close_stream(i, s);
    return false;
  }

  // Reads the failure report an exited worker left (the first; none from a worker that did not fail through
  // lockstep, or was killed): whom it blames.
  void read_report(size_t i) {
    Worker& w = workers_[i];
    if (!w.report) return;
    std::string text;
    char buf[512];
    ssize_t n;
    while (text.size() < 4096 && ((n = ::read(w.report.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
      if (n > 0) text.append(buf, static_cast<size_t>(n));
    w.report.reset();
    if (const std::optional<FailureReport> report = parse_failure_report(text))
      w.named = worker_blamed(*report, i, workers_.size());
  }

  // Reads what an exited worker left in its pipes, so that its last words are shown before it is judged.
  // Bounded: a child of the worker may still hold a pipe and write on.
  void drain(size_t i) {
    for (size_t s = 0; s < 2; ++s)
      for (int k = 0; k < 64 && read_stream(i, s); ++k) {
      }
  }

  static int ms_until(Clock::time_point t) {
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
  }

  // Copies output until every worker has exited and its pipes are drained, enforcing the deadlines.
  void pump() {
    std::optional<Clock::time_point> drain_until;
    while (true) {
      reap();
      check_suspect();
      check_launcher_signals();
      const auto now = Clock::now();
      if (stopping_ && !killed_ && now >= kill_at_) stop(SIGKILL);
      if (killed_ && now >= give_up_at_) {
        for (size_t i = 0; i < workers_.size(); ++i)
          if (workers_[i].running) {
            say(make_message("worker ", i, " (pid ", workers_[i].pid, ") did not exit after SIGKILL; leaving it"));
            workers_[i].running = false;
          }
      }
      const bool any_running = std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.running; });
      bool any_open = false;
      for (const Worker& w : workers_)
        for (const Stream& s : w.streams) any_open |= static_cast<bool>(s.fd);
      if (!any_running) {
        if (!drain_until) drain_until = now + kDrainTimeout;
        if (!any_open || now >= *drain_until) break;
      }

      int timeout = 1000;
      if (stopping_ && !killed_) timeout = std::min(timeout, ms_until(kill_at_));
      if (killed_) timeout = std::min(timeout, ms_until(give_up_at_));
      if (drain_until) timeout = std::min(timeout, ms_until(*drain_until));
      if (suspect_ && !stopping_) timeout = std::min(timeout, ms_until(settle_until_));
      std::vector<pollfd> fds{{g_wake_pipe[0], POLLIN, 0}};
      std::vector<std::pair<size_t, size_t>> owners;
      for (size_t i = 0; i < workers_.size(); ++i)
        for (size_t s = 0; s < 2; ++s)
          if (workers_[i].streams[s].fd) {
            fds.push_back({workers_[i].streams[s].fd.get(), POLLIN, 0});
            owners.emplace_back(i, s);
          }
      if (::poll(fds.data(), fds.size(), timeout) < 0) {
        // EINTR is a signal, handled at the top; anything else (ENOMEM) passes, and the deadlines still hold.
        if (errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if (fds[0].revents) drain_wake_pipe();
      for (size_t k = 1; k < fds.size(); ++k) {
        if (!fds[k].revents) continue;
        const auto [i, s] = owners[k - 1];
        read_stream(i, s);
      }
    }
    for (size_t i = 0; i < workers_.size(); ++i)
      for (size_t s = 0; s < 2; ++s)
        if (workers_[i].streams[s].fd) close_stream(i, s);
  }

  const LaunchOptions& o_;
  const Program& program_;
  LogFiles& logs_;
  const int attempt_;
  const bool restarts_left_;
  std::vector<Worker> workers_;
  Outcome outcome_;
  std::optional<size_t> suspect_;  // the worker another's error named, given kSettleTimeout to exit itself
  std::optional<Exit> first_failure_;
  Clock::time_point settle_until_;
  bool stopping_ = false, killed_ = false, interrupted_ = false;
  Clock::time_point kill_at_, give_up_at_;
};

void check_options(const LaunchOptions& o) {
  if (o.num_workers < 1)
    throw LaunchError(make_message("-n (the number of workers) must be at least 1, got ", o.num_workers));
  if (o.num_workers > kMaxWorkers)
    throw LaunchError(make_message("-n (the number of workers) must be at most ", kMaxWorkers, " on one host, got ",
                                   o.num_workers, ": spread larger jobs over several hosts"));
  if (o.max_restarts < 0) throw LaunchError(make_message("--max-restarts must be >= 0, got ", o.max_restarts));
  if (o.start_port < 0 || o.start_port > 65535)
    throw LaunchError(make_message("--start-port must be in 0..65535, got ", o.start_port));
  if (!(o.grace_period_s >= 0)) throw LaunchError(make_message("--grace-period must be >= 0, got ", o.grace_period_s));
  if (o.command.empty())
    throw LaunchError("no worker command: put it after --, as in lockstep launch -n 2 -- CMD ARGS");
}

}  // namespace

int launch(const LaunchOptions& o) {
  check_options(o);
  const Program program{find_executable(o.command[0]), o.command, worker_environment(o)};
  LogFiles logs(o.log_dir, o.num_workers);
  SignalHandlers handlers;
  std::fflush(nullptr);  // nothing buffered in the launcher may be written twice by a child
  int attempt = 0, failures = 0;
  int code = 0;
  for (;; ++attempt) {
    if (g_stop_signal) {
      code = 128 + g_stop_signal;
      break;
    }
    const bool restarts_left = failures < o.max_restarts;
    const Outcome r =
        Group(o, program, logs, attempt, restarts_left).run(pick_ports(o.host, o.num_workers, o.start_port));
    code = r.code;
    if (r.code == 0 || !r.restartable || g_stop_signal) break;
    std::string line;
    if (r.preempted) {
      // Not a failure: the job saved where it stopped. A short pause lets the ports and the machine settle.
      line = "lockstep launch: restarting the group after a preemption";
      const auto until = Clock::now() + kPreemptionBackoff;
      while (Clock::now() < until && !g_stop_signal) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    } else {
      if (!restarts_left) break;
      ++failures;
      line = make_message("lockstep launch: restarting the group (attempt ", failures, " of ", o.max_restarts, ")");
    }
    write_all(STDERR_FILENO, line + "\n");
    logs.write_all_workers(line);
  }
  if (attempt > 0) {
    std::string how = code == 0 ? "finished" : "failed";
    if (g_stop_signal) how = "stopped";
    say(make_message(how, " after ", attempt, attempt == 1 ? " restart" : " restarts"));
  }
  // A log that could not be written fails the launcher, but never hides a worker's own failure.
  if (!logs.close() && code == 0) code = 1;
  return code;
}

}  // namespace lockstep::cli
