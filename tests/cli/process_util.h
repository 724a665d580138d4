// Starting, killing and waiting for worker processes with deadlines, for multi-process tests on 127.0.0.1.
#pragma once
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../free_port.h"
#include "cli_util.h"

namespace lockstep::testing {


// TF_CONFIG for worker `index` of a cluster of workers on the given ports.
inline std::string tf_config(const std::vector<int>& ports, int index) {
  std::string workers;
  for (int p : ports) {
    if (!workers.empty()) workers += ", ";
    workers += "\"127.0.0.1:";
    workers += std::to_string(p);
    workers += "\"";
  }
  return "{\"cluster\": {\"worker\": [" + workers + "]}, \"task\": {\"type\": \"worker\", \"index\": " +
         std::to_string(index) + "}}";
}

// A child process running `lockstep <args>` with extra environment, its output in files.
class Worker {
 public:
  Worker(const std::string& args, const std::string& env, const std::filesystem::path& dir, const std::string& name)
      : out_(dir / (name + ".out")), err_(dir / (name + ".err")) {
    const char* bin = std::getenv("LOCKSTEP_BIN_DIR");
    const std::string cmd = "exec env " + env + " " + (bin ? bin : LOCKSTEP_BIN_DIR) + std::string("/lockstep ") + args +
                            " >" + out_.string() + " 2>" + err_.string();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a test that dies leaves no worker behind
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Worker() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  void signal(int sig) { ::kill(pid_, sig); }
  // The exit status once the process ended within `timeout`, else nullopt.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!status_) {
      int s;
      if (::waitpid(pid_, &s, WNOHANG) == pid_) status_ = s;
      else if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return *status_;
  }
  std::string out() const { return read_all(out_.string()); }
  std::string err() const { return read_all(err_.string()); }

 private:
  pid_t pid_;
  std::filesystem::path out_, err_;
  std::optional<int> status_;
};

// One process per worker, on fresh ports, worker i running `lockstep <args[i]>` with its TF_CONFIG and `env`;
// output in dir/<name><i>.out and .err.
inline std::vector<std::unique_ptr<Worker>> start_workers(const std::vector<std::string>& args, const std::string& env,
                                                          const std::filesystem::path& dir, const std::string& name) {
  std::vector<int> ports;
  for (size_t i = 0; i < args.size(); ++i) ports.push_back(free_port());
  std::vector<std::unique_ptr<Worker>> ws;
  for (size_t i = 0; i < args.size(); ++i)
    ws.push_back(std::make_unique<Worker>(args[i], env + " TF_CONFIG='" + tf_config(ports, static_cast<int>(i)) + "'",
                                          dir, name + std::to_string(i)));
  return ws;
}

inline int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace lockstep::testing
