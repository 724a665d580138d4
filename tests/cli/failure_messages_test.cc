// What a failed job says, with real training processes on 127.0.0.1: the launcher names the worker whose
// loss started the failure (not a survivor that exited because of it), and a chief whose port is taken
// says so in one line without gRPC's own log in front of it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <sstream>

#include "process_util.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The processes whose parent is `parent`, from /proc/<pid>/stat ("pid (comm) state ppid ...").
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> children;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string text = read_all(entry.path() / "stat");
    const size_t end = text.rfind(')');
    if (end == std::string::npos) continue;
    std::istringstream rest(text.substr(end + 1));
    char state;
    pid_t ppid;
    if (rest >> state >> ppid && ppid == parent) children.push_back(std::stoi(name));
  }
  return children;
}

// The state letter of a process ('R', 'S', 'T', 'Z'...), or 0 once it is gone.
char state_of(pid_t pid) {
  const std::string text = read_all("/proc/" + std::to_string(pid) + "/stat");
  const size_t end = text.rfind(')');
  return end == std::string::npos || end + 2 >= text.size() ? 0 : text[end + 2];
}

std::string environment_of(pid_t pid) {
  std::string env = read_all("/proc/" + std::to_string(pid) + "/environ");
  std::replace(env.begin(), env.end(), '\0', '\n');
  return env;
}

// `lockstep launch -n 2 -- lockstep train ...` running a long epoch, with the pids of the launcher and of
// each worker once both have joined the cluster.
class LaunchedJob : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("failure_messages");
    write_idx_dataset(dir_, 640, 64);
  }
  void TearDown() override {
    for (pid_t w : workers_)
      if (w > 0) ::kill(w, SIGKILL);  // a stopped or lingering worker never outlives the test
    launcher_.reset();
    fs::remove_all(dir_);
  }

  void start(const std::string& env) {
    launcher_ = std::make_unique<Worker>(
        "launch -n 2 --grace-period 1 -- lockstep train --epochs 1 --steps-per-epoch 100000 --batch-size 16 "
        "--threads 1 --verbose 0 --dataset " +
            dir_.string(),
        env, dir_, "launch");
    // The test's only child is the launcher (the helper's shell execs it).
    const auto deadline = Clock::now() + 60s;
    while (launcher_->err().find("joined the cluster as worker:1") == std::string::npos) {
      ASSERT_LT(Clock::now(), deadline) << "the workers never joined: " << launcher_->err();
      std::this_thread::sleep_for(100ms);
    }
    const std::vector<pid_t> mine = children_of(::getpid());
    ASSERT_EQ(mine.size(), 1u);
    launcher_pid_ = mine[0];
    for (pid_t child : children_of(launcher_pid_)) {
      const std::string env_text = environment_of(child);
      for (int i = 0; i < 2; ++i)
        if (env_text.find("\"index\":" + std::to_string(i) + "}") != std::string::npos) workers_[i] = child;
    }
    ASSERT_GT(workers_[0], 0);
    ASSERT_GT(workers_[1], 0);
  }

  // Waits (bounded) for the launcher; its exit code.
  int finish() {
    const std::optional<int> status = launcher_->wait(60s);
    EXPECT_TRUE(status.has_value()) << "the launcher still runs 60 s on: " << launcher_->err();
    return status ? exit_code(*status) : -1;
  }

  fs::path dir_;
  std::unique_ptr<Worker> launcher_;
  pid_t launcher_pid_ = -1;
  pid_t workers_[2] = {-1, -1};
};

TEST_F(LaunchedJob, NamesTheKilledWorkerEvenWhenTheSurvivorExitedFirst) {
  ASSERT_NO_FATAL_FAILURE(start(""));
  // The launcher sleeps while worker 1 is killed and worker 0 exits because of it, so that it finds both
  // gone at once, the survivor first in its list.
  ::kill(launcher_pid_, SIGSTOP);
  ::kill(workers_[1], SIGKILL);
  const auto deadline = Clock::now() + 30s;
  while (state_of(workers_[0]) != 'Z' && Clock::now() < deadline) std::this_thread::sleep_for(50ms);
  ::kill(launcher_pid_, SIGCONT);
  EXPECT_EQ(finish(), 128 + SIGKILL) << launcher_->err();
  EXPECT_EQ(lines_after(launcher_->err(), "lockstep launch: "),
            std::vector<std::string>{"worker 1 was killed by signal SIGKILL"})
      << launcher_->err();
}

TEST_F(LaunchedJob, NamesTheHungWorkerThatTheOthersReport) {
  // Worker 1 stops answering; the chief declares it failed after 2 s without heartbeats and exits 1.
  ASSERT_NO_FATAL_FAILURE(start("LOCKSTEP_HEARTBEAT_TIMEOUT=2"));
  ::kill(workers_[1], SIGSTOP);
  EXPECT_EQ(finish(), 1) << launcher_->err();
  const std::vector<std::string> said = lines_after(launcher_->err(), "lockstep launch: ");
  ASSERT_FALSE(said.empty()) << launcher_->err();
  EXPECT_EQ(said[0], "worker 1 was lost (worker 0 exited with code 1 reporting it)") << launcher_->err();
}

TEST(ChiefPort, TakenPortIsOneLineWithoutGrpcsLog) {
  const fs::path dir = temp_dir("chief_port");
  struct Cleanup {
    fs::path dir;
    int holder = -1;
    ~Cleanup() {
      if (holder >= 0) ::close(holder);
      fs::remove_all(dir);
    }
  } cleanup{dir};
  write_idx_dataset(dir, 64, 16);
  // Hold the chief's port the way another job would: bound on every interface and listening.
  const int holder = cleanup.holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t n = sizeof a;
  ::getsockname(holder, reinterpret_cast<sockaddr*>(&a), &n);
  const std::string config = tf_config({ntohs(a.sin_port), free_port()}, 0);
  const std::string args = "train --epochs 1 --threads 1 --verbose 0 --dataset " + dir.string();

  Result r = run_lockstep(args, "TF_CONFIG='" + config + "'", 60);
  EXPECT_EQ(r.code, 1) << r.err;  // the environment, not the input: a restart on new ports may succeed
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("the port is in use"), std::string::npos) << r.err;
  // GRPC_VERBOSITY, set explicitly, brings gRPC's own log back for debugging.
  r = run_lockstep(args, "GRPC_VERBOSITY=ERROR TF_CONFIG='" + config + "'", 60);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_GT(count_lines(r.err), 1u) << r.err;
}

}  // namespace
}  // namespace lockstep::testing
