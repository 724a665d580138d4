// gloo between real processes: two forked workers on 127.0.0.1 meet through a store in a temporary
// directory, all-reduce, and one is killed with SIGKILL in the middle of a collective loop; the survivor
// must throw UnavailableError naming it within seconds, not hang.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "lockstep/core/error.h"
#include "lockstep/distribute/collective/gloo.h"

namespace lockstep::distribute {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// A KeyValueStore shared by processes through a directory: one file per key, written to a temporary name
// and renamed, so a reader sees all of a value or none; get() polls every 5 ms.
class FileStore final : public KeyValueStore {
 public:
  explicit FileStore(fs::path dir) : dir_(std::move(dir)) {}

  void set(const std::string& key, const std::string& value) override {
    const fs::path tmp = dir_ / (".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter_++));
    {
      std::ofstream out(tmp, std::ios::binary);
      out << value;
    }
    fs::rename(tmp, path(key));
  }
  std::string get(const std::string& key, milliseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      std::ifstream in(path(key), std::ios::binary);
      if (in) {
        std::ostringstream value;
        value << in.rdbuf();
        return value.str();
      }
      if (Clock::now() >= deadline) throw DeadlineExceededError("FileStore: no key " + key + " in " + dir_.string());
      std::this_thread::sleep_for(milliseconds(5));
    }
  }

 private:
  fs::path path(const std::string& key) const {
    std::string name;
    for (char ch : key) name += ch == '/' ? '%' : ch;
    return dir_ / name;
  }
  fs::path dir_;
  int counter_ = 0;
};

constexpr size_t kCount = 1 << 16;

// One worker process. Exit codes: 0 = caught UnavailableError after the peer died (or the peer finished),
// 1 = wrong all_reduce result, 2 = DeadlineExceededError, 3 = other error.
int worker(const fs::path& dir, int rank) {
  FileStore store(dir);
  GlooOptions options;
  options.peer_names = {"worker:0", "worker:1"};
  options.connect_timeout = std::chrono::seconds(20);
  options.prefix = "job";
  try {
    auto comm = make_gloo_communicator(store, rank, 2, options);
    std::vector<float> v(kCount);
    for (int step = 0; step < 10; ++step) {
      std::fill(v.begin(), v.end(), static_cast<float>(rank + step));
      comm->all_reduce(v.data(), v.size(), DType::float32, ReduceOp::SUM, {.timeout = std::chrono::seconds(20)});
      for (float x : v) {
        if (x != static_cast<float>(2 * step + 1)) return 1;
      }
    }
    store.set("ten_done/" + std::to_string(rank), "1");
    for (;;) comm->all_reduce(v.data(), v.size(), DType::float32, ReduceOp::SUM, {.timeout = std::chrono::seconds(30)});
  } catch (const UnavailableError& e) {
    store.set("error/" + std::to_string(rank), e.what());
    return 0;
  } catch (const DeadlineExceededError& e) {
    store.set("error/" + std::to_string(rank), e.what());
    return 2;
  } catch (const std::exception& e) {
    store.set("error/" + std::to_string(rank), e.what());
    return 3;
  }
}

// Kills and reaps whatever child is still running when the test ends, whatever the outcome.
struct Children {
  std::vector<pid_t> pids;
  ~Children() {
    for (pid_t p : pids) {
      if (p > 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
    }
  }
};

// waitpid with a deadline: the exit status, or -1 if the child is still running at the deadline.
int wait_for_exit(pid_t& pid, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(milliseconds(5));
  }
}

TEST(GlooProcessTest, SurvivorOfAKilledPeerThrowsUnavailableWithinSeconds) {
  char pattern[] = "/tmp/lockstep-collective-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const fs::path dir = pattern;
  Children children;
  for (int rank = 0; rank < 2; ++rank) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(worker(dir, rank));  // the child never returns into the test runner
    children.pids.push_back(pid);
  }
  FileStore store(dir);
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_NO_THROW(store.get("ten_done/" + std::to_string(rank), std::chrono::seconds(30)))
        << "worker " << rank << " did not finish its 10 all_reduces";
  }
  std::this_thread::sleep_for(milliseconds(100));  // both are inside the endless all_reduce loop now
  ASSERT_EQ(::kill(children.pids[1], SIGKILL), 0);
  const auto killed = Clock::now();
  const int status = wait_for_exit(children.pids[0], std::chrono::seconds(10));
  const double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
  ASSERT_NE(status, -1) << "worker 0 still waits 10 s after its peer was killed";
  const std::string message = store.get("error/0", milliseconds(100));
  EXPECT_EQ(status, 0) << message;
  EXPECT_LT(seconds, 5.0);
  EXPECT_NE(message.find("worker:1 (rank 1)"), std::string::npos) << message;
  EXPECT_NE(message.find("lockstep launch --max-restarts"), std::string::npos) << message;
  std::cout << "    survivor failed " << seconds << " s after the kill: " << message << "\n";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace lockstep::distribute
