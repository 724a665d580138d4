// The local launcher: free ports, one TF_CONFIG per worker, fork/exec into one process group per worker,
// output prefixed line by line from pipes read with poll(), and the group stopped (SIGTERM, then SIGKILL
// after a grace period) and restarted when a worker fails.
#include "launcher.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
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
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "lockstep/core/error.h"

extern char** environ;

namespace lockstep::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxLine = 64 * 1024;                   // longer output without a line end is cut here
constexpr auto kDrainTimeout = std::chrono::seconds(1);  // a worker's own child may hold its pipe open
constexpr auto kReapTimeout = std::chrono::seconds(5);   // after SIGKILL only a process stuck in the kernel lingers

// Anything that stops the launcher before or while starting workers: one line, exit code 2.
class LaunchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
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
  explicit operator bool() const { return fd_ >= 0; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Writes everything unless the reader is gone (EPIPE: SIGPIPE is ignored while launching), in which
// case the output is dropped and the workers keep running.
void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
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

// The launcher's environment without TF_CONFIG, plus extra_env, plus OMP_NUM_THREADS = cores / workers
// unless it is already set, so that N workers on one host do not each start a thread per core.
std::vector<std::string> worker_environment(const LaunchOptions& o) {
  std::vector<std::string> env;
  bool has_threads = o.extra_env.count("OMP_NUM_THREADS") > 0;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const std::string name(entry.substr(0, entry.find('=')));
    if (name == "TF_CONFIG" || o.extra_env.count(name)) continue;
    has_threads |= name == "OMP_NUM_THREADS";
    env.emplace_back(entry);
  }
  for (const auto& [name, value] : o.extra_env)
    if (name != "TF_CONFIG") env.push_back(name + "=" + value);
  if (!has_threads) env.push_back("OMP_NUM_THREADS=" + std::to_string(std::max(1, usable_cores() / o.num_workers)));
  return env;
}

struct Program {
  std::string path;
  std::vector<std::string> argv;
  std::vector<std::string> env;  // without TF_CONFIG, which differs per worker
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

// worker-<i>.log per worker, truncated when the launcher starts and appended to across restarts.
class LogFiles {
 public:
  LogFiles(const std::string& dir, int n) {
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw LaunchError("cannot create --log-dir '" + dir + "': " + ec.message());
    for (int i = 0; i < n; ++i) {
      const std::string path = dir + "/worker-" + std::to_string(i) + ".log";
      Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644));
      if (!fd) throw LaunchError("cannot write the log file " + path + ": " + errno_text(errno));
      files_.push_back(std::move(fd));
    }
  }
  void write(int worker, std::string_view line) {
    if (files_.empty()) return;
    std::string text(line);
    text += '\n';
    write_all(files_[static_cast<size_t>(worker)].get(), text);
  }
  void write_all_workers(std::string_view line) {
    for (size_t i = 0; i < files_.size(); ++i) write(static_cast<int>(i), line);
  }

 private:
  std::vector<Fd> files_;
};

// ---- one run of the group -----------------------------------------------------------------------------

struct Outcome {
  int code = 0;
  bool restartable = false;  // a worker failed; exec failures and the launcher's own stop are final
};

struct Stream {
  Fd fd;       // read end of the worker's stdout or stderr; closed at end of file
  int out_fd;  // the launcher's stdout or stderr
  LineSplitter lines;
};

struct Worker {
  pid_t pid = -1;  // also the id of its process group
  bool running = false;
  std::array<Stream, 2> streams{Stream{{}, STDOUT_FILENO, {}}, Stream{{}, STDERR_FILENO, {}}};
};

class Group {
 public:
  Group(const LaunchOptions& o, const Program& program, LogFiles& logs)
      : o_(o), program_(program), logs_(logs), workers_(static_cast<size_t>(o.num_workers)) {}

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
    auto pointers = [](std::vector<std::string>& v) {
      std::vector<char*> p;
      for (std::string& s : v) p.push_back(s.data());
      p.push_back(nullptr);
      return p;
    };
    std::vector<std::string> args = program_.argv;
    std::vector<char*> argv = pointers(args), envp = pointers(env);

    int out[2], err[2], status[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return fail_to_start(i, errno);
    Fd out_r(out[0]), out_w(out[1]);
    if (::pipe2(err, O_CLOEXEC) != 0) return fail_to_start(i, errno);
    Fd err_r(err[0]), err_w(err[1]);
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

  void reap() {
    for (size_t i = 0; i < workers_.size(); ++i) {
      Worker& w = workers_[i];
      if (!w.running) continue;
      int status = 0;
      const pid_t r = ::waitpid(w.pid, &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) continue;
      w.running = false;
      if (r < 0) continue;  // not ours any more (someone else reaped it); nothing to report
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code == 0 || stopping_) continue;
      if (WIFEXITED(status))
        say(make_message("worker ", i, " failed with exit code ", code));
      else
        say(make_message("worker ", i, " was killed by signal ", signal_name(WTERMSIG(status))));
      outcome_ = {code, true};
      stop(SIGTERM);
    }
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
    std::string text = "[worker " + std::to_string(i) + "] ";
    text.append(line);
    text += '\n';
    write_all(workers_[i].streams[stream].out_fd, text);
    logs_.write(static_cast<int>(i), line);
  }

  void close_stream(size_t i, size_t s) {
    Stream& st = workers_[i].streams[s];
    st.lines.finish([&](std::string_view line) { emit(i, s, line); });
    st.fd.reset();
  }

  static int ms_until(Clock::time_point t) {
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now()).count();
    return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
  }

  // Copies output until every worker has exited and its pipes are drained, enforcing the deadlines.
  void pump() {
    std::optional<Clock::time_point> drain_until;
    char buf[65536];
    while (true) {
      reap();
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
        const ssize_t n = ::read(fds[k].fd, buf, sizeof buf);
        if (n > 0)
          workers_[i].streams[s].lines.feed(std::string_view(buf, static_cast<size_t>(n)),
                                            [&](std::string_view line) { emit(i, s, line); });
        else if (n == 0 || (errno != EAGAIN && errno != EINTR))
          close_stream(i, s);
      }
    }
    for (size_t i = 0; i < workers_.size(); ++i)
      for (size_t s = 0; s < 2; ++s)
        if (workers_[i].streams[s].fd) close_stream(i, s);
  }

  const LaunchOptions& o_;
  const Program& program_;
  LogFiles& logs_;
  std::vector<Worker> workers_;
  Outcome outcome_;
  bool stopping_ = false, killed_ = false, interrupted_ = false;
  Clock::time_point kill_at_, give_up_at_;
};

void check_options(const LaunchOptions& o) {
  if (o.num_workers < 1)
    throw LaunchError(make_message("-n (the number of workers) must be at least 1, got ", o.num_workers));
  if (o.max_restarts < 0) throw LaunchError(make_message("--max-restarts must be >= 0, got ", o.max_restarts));
  if (o.start_port < 0 || o.start_port > 65535)
    throw LaunchError(make_message("--start-port must be in 0..65535, got ", o.start_port));
  if (!(o.grace_period_s >= 0)) throw LaunchError(make_message("--grace-period must be >= 0, got ", o.grace_period_s));
  if (o.command.empty())
    throw LaunchError("no worker command: put it after --, as in lockstep launch -n 2 -- CMD ARGS");
}

}  // namespace

int launch(const LaunchOptions& o) {
  try {
    check_options(o);
    const Program program{find_executable(o.command[0]), o.command, worker_environment(o)};
    LogFiles logs(o.log_dir, o.num_workers);
    SignalHandlers handlers;
    std::fflush(nullptr);  // nothing buffered in the launcher may be written twice by a child
    for (int attempt = 0;; ++attempt) {
      if (g_stop_signal) return 128 + g_stop_signal;
      const Outcome r = Group(o, program, logs).run(pick_ports(o.host, o.num_workers, o.start_port));
      if (r.code == 0 || !r.restartable || attempt >= o.max_restarts || g_stop_signal) return r.code;
      const std::string line =
          make_message("lockstep launch: restarting the group (attempt ", attempt + 1, " of ", o.max_restarts, ")");
      write_all(STDERR_FILENO, line + "\n");
      logs.write_all_workers(line);
    }
  } catch (const std::exception& e) {
    say(e.what());
    return 2;
  }
}

}  // namespace lockstep::cli
