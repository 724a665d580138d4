// The process backends (gloo, shared memory, the network) between real processes: forked workers on 127.0.0.1
// meet through a store in a temporary directory and all-reduce. One is killed with SIGKILL in the middle of a
// collective loop: the survivor must throw UnavailableError naming it within seconds, not hang. Stray clients
// hammer every listening socket of a starting job on the network backend: the job must still come up.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <deque>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "lockstep/core/error.h"
#include "lockstep/distribute/collective/gloo.h"
#include "lockstep/distribute/collective/network.h"
#include "lockstep/distribute/collective/shared_memory.h"

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

enum class Backend { gloo, shared_memory, network };

// The options of rank r of `size` ("worker:r"), their keys in the store under "job/".
template <typename Options>
Options job_options(int size) {
  Options options;
  for (int r = 0; r < size; ++r) options.peer_names.push_back("worker:" + std::to_string(r));
  options.connect_timeout = std::chrono::seconds(20);
  options.prefix = "job";
  return options;
}

std::unique_ptr<Communicator> connect(Backend backend, KeyValueStore& store, int rank, int size = 2) {
  switch (backend) {
    case Backend::shared_memory:
      return make_shared_memory_communicator(store, rank, size, job_options<SharedMemoryOptions>(size));
    case Backend::network:
      return make_network_communicator(store, rank, size, job_options<NetworkOptions>(size));
    case Backend::gloo:
      break;
  }
  return make_gloo_communicator(store, rank, size, job_options<GlooOptions>(size));
}

// One worker process. Exit codes: 0 = caught UnavailableError after the peer died (or the peer finished),
// 1 = wrong all_reduce result, 2 = DeadlineExceededError, 3 = other error.
int worker(Backend backend, const fs::path& dir, int rank) {
  FileStore store(dir);
  try {
    auto comm = connect(backend, store, rank);
    std::vector<float> v(kCount);
    for (int step = 0; step < 10; ++step) {
      std::fill(v.begin(), v.end(), static_cast<float>(rank + step));
      comm->all_reduce(v.data(), v.size(), DType::float32, ReduceOp::SUM, {.timeout = std::chrono::seconds(20)});
      for (float x : v) {
        if (x != static_cast<float>(2 * step + 1)) return 1;
      }
    }
    store.set("ten_done/" + std::to_string(rank), "1");
    // A timeout longer than the test waits: only the closed connection of a killed peer can end this loop in time.
    for (;;)
      comm->all_reduce(v.data(), v.size(), DType::float32, ReduceOp::SUM, {.timeout = std::chrono::seconds(120)});
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

// A fresh directory under /tmp, removed when the test ends, whatever the outcome.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    std::string pattern = "/tmp/" + name + "-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

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

// Two worker processes all-reduce in a loop; one is killed: the other must fail within seconds, naming it.
void survivor_of_a_killed_peer_fails_naming_it(Backend backend) {
  const TempDir temp("lockstep-collective");
  ASSERT_FALSE(temp.path.empty());
  const fs::path& dir = temp.path;
  Children children;
  for (int rank = 0; rank < 2; ++rank) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(worker(backend, dir, rank));  // the child never returns into the test runner
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
  const int status = wait_for_exit(children.pids[0], std::chrono::seconds(60));
  const double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
  ASSERT_NE(status, -1) << "worker 0 still waits 60 s after its peer was killed";
  const std::string message = store.get("error/0", milliseconds(100));
  EXPECT_EQ(status, 0) << message;  // UnavailableError, not its timeout's DeadlineExceededError (status 2)
  EXPECT_NE(message.find("worker:1 (rank 1)"), std::string::npos) << message;
  EXPECT_NE(message.find("lockstep launch --max-restarts"), std::string::npos) << message;
  std::cout << "    survivor failed " << seconds << " s after the kill: " << message << "\n";
}

TEST(GlooProcessTest, SurvivorOfAKilledPeerThrowsUnavailableWithinSeconds) {
  survivor_of_a_killed_peer_fails_naming_it(Backend::gloo);
}

// The survivor learns of the exit from the peer's pidfd, at once.
TEST(SharedMemoryProcessTest, SurvivorOfAKilledPeerThrowsUnavailableWithinSeconds) {
  survivor_of_a_killed_peer_fails_naming_it(Backend::shared_memory);
}

// The survivor learns of the exit from UCX, when the kernel closes the peer's connection.
TEST(NetworkProcessTest, SurvivorOfAKilledPeerThrowsUnavailableWithinSeconds) {
  survivor_of_a_killed_peer_fails_naming_it(Backend::network);
}

// One worker of the mapped-region test: it writes its region, then waits in barriers until its peer is killed.
// Exit codes: 0 = the barrier failed naming worker:1 and worker:1's region still held what it wrote, 1 = a wrong
// value, 2 = another error, 4 = no regions mapped.
int mapped_region_worker(const fs::path& dir, int rank) {
  FileStore store(dir);
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<MappedRegions> regions;
  auto wrote = [](int r, size_t i) { return static_cast<float>(r * 100000 + i); };
  try {
    comm = connect(Backend::shared_memory, store, rank);
    regions = comm->map_regions(kCount * sizeof(float), {.timeout = std::chrono::seconds(20)});
    if (!regions) return 4;
    auto* mine = static_cast<float*>(regions->region(rank));
    for (size_t i = 0; i < kCount; ++i) mine[i] = wrote(rank, i);
    comm->barrier({.timeout = std::chrono::seconds(20)});
    store.set("written/" + std::to_string(rank), "1");
    for (;;) comm->barrier({.timeout = std::chrono::seconds(120)});
  } catch (const UnavailableError& e) {
    store.set("error/" + std::to_string(rank), e.what());
    if (std::string(e.what()).find("worker:1 (rank 1)") == std::string::npos) return 2;
    const auto* theirs = static_cast<const float*>(regions->region(1));
    for (size_t i = 0; i < kCount; ++i)
      if (theirs[i] != wrote(1, i)) return 1;
    return 0;
  } catch (const std::exception& e) {
    store.set("error/" + std::to_string(rank), e.what());
    return 2;
  }
}

// A peer killed after writing its mapped region: the survivor's next barrier fails naming it, and the peer's region
// stays readable, with what it wrote, until the survivor lets go of it.
TEST(SharedMemoryProcessTest, AKilledPeersMappedRegionStaysReadableAndTheBarrierNamesIt) {
  const TempDir temp("lockstep-mapped");
  ASSERT_FALSE(temp.path.empty());
  Children children;
  for (int rank = 0; rank < 2; ++rank) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(mapped_region_worker(temp.path, rank));
    children.pids.push_back(pid);
  }
  FileStore store(temp.path);
  for (int rank = 0; rank < 2; ++rank)
    ASSERT_NO_THROW(store.get("written/" + std::to_string(rank), std::chrono::seconds(30)))
        << "worker " << rank << " did not map and write its region";
  std::this_thread::sleep_for(milliseconds(100));
  ASSERT_EQ(::kill(children.pids[1], SIGKILL), 0);
  const int status = wait_for_exit(children.pids[0], std::chrono::seconds(60));
  ASSERT_NE(status, -1) << "worker 0 still waits 60 s after its peer was killed";
  EXPECT_EQ(status, 0) << store.get("error/0", milliseconds(100));
}

// The store for the stray-connection test: a get() of a peer's address (key "job/<rank>") waits until the test sets
// "go". Each worker publishes its own once it listens, then waits here, so the test can attack every listening
// socket before any real peer has connected to it.
class GatedStore final : public KeyValueStore {
 public:
  explicit GatedStore(FileStore& files) : files_(files) {}
  void set(const std::string& key, const std::string& value) override { files_.set(key, value); }
  std::string get(const std::string& key, milliseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    if (key.rfind("job/", 0) == 0 && std::isdigit(static_cast<unsigned char>(key[4]))) files_.get("go", timeout);
    return files_.get(key,
                      std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - Clock::now())));
  }

 private:
  FileStore& files_;
};

constexpr int kStrayRanks = 3;

// One worker of the stray-connection test: 0 = the communicator came up and every all_reduce was right,
// 1 = a wrong result, 3 = an error (its message in the store as error/<rank>).
int stray_worker(const fs::path& dir, int rank) {
  FileStore files(dir);
  GatedStore store(files);
  try {
    auto comm = connect(Backend::network, store, rank, kStrayRanks);
    std::vector<float> v(4096);
    for (int step = 0; step < 5; ++step) {
      std::fill(v.begin(), v.end(), static_cast<float>(rank + step));
      comm->all_reduce(v.data(), v.size(), DType::float32, ReduceOp::SUM, {.timeout = std::chrono::seconds(20)});
      const float expected = static_cast<float>(kStrayRanks * (kStrayRanks - 1) / 2 + kStrayRanks * step);
      for (float x : v) {
        if (x != expected) return 1;
      }
    }
    return 0;
  } catch (const std::exception& e) {
    files.set("error/" + std::to_string(rank), e.what());
    return 3;
  }
}

// The TCP ports that process `pid` listens on: its sockets (links in /proc/<pid>/fd) that /proc/<pid>/net/tcp
// shows in state 0A (LISTEN).
std::set<int> listening_ports(pid_t pid) {
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  std::set<std::string> inodes;
  std::error_code ec;
  for (fs::directory_iterator it(proc / "fd", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string link = fs::read_symlink(it->path(), ec).string();
    if (!ec && link.rfind("socket:[", 0) == 0) inodes.insert(link.substr(8, link.size() - 9));
  }
  std::set<int> ports;
  std::ifstream table(proc / "net" / "tcp");
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (state == "0A" && inodes.count(inode)) ports.insert(std::stoi(local.substr(local.find(':') + 1), nullptr, 16));
  }
  return ports;
}

// What a stray client does after connecting: send random bytes and close, close at once, stay silent, or
// send a wrong 8-byte hello and stay.
enum class Stray { kRandomBytes, kCloseAtOnce, kSilent, kWrongHello };

// Stray connections to 127.0.0.1; the ones that stay open are closed when it is destroyed.
class Hammer {
 public:
  ~Hammer() {
    for (int fd : held_) ::close(fd);
  }

  // True if the connection was made (every wait on it bounded by 200 ms).
  bool hit(int port, Stray kind) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const timeval limit{0, 200'000};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);  // connect(2) waits at most this long
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      ::close(fd);
      return false;
    }
    std::vector<char> bytes(kind == Stray::kRandomBytes ? 64 : kind == Stray::kWrongHello ? 8 : 0);
    for (char& b : bytes) b = static_cast<char>(rng_());
    if (!bytes.empty()) ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (kind == Stray::kRandomBytes || kind == Stray::kCloseAtOnce) {
      ::close(fd);
    } else {
      held_.push_back(fd);
      if (held_.size() > 64) {
        ::close(held_.front());
        held_.pop_front();
      }
    }
    return true;
  }

 private:
  std::mt19937_64 rng_{20240607};
  std::deque<int> held_;
};

TEST(NetworkProcessTest, StrayConnectionsToTheListenersDuringRendezvousAreDropped) {
  const TempDir temp("lockstep-stray");
  ASSERT_FALSE(temp.path.empty());
  const fs::path& dir = temp.path;
  Children children;
  for (int rank = 0; rank < kStrayRanks; ++rank) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(stray_worker(dir, rank));
    children.pids.push_back(pid);
  }
  FileStore files(dir);
  for (int rank = 0; rank < kStrayRanks; ++rank) {
    ASSERT_NO_THROW(files.get("job/" + std::to_string(rank), std::chrono::seconds(30)))
        << "worker " << rank << " did not publish its address";
  }
  // Every pair of every worker listens now, and no peer has connected yet.
  std::set<int> ports;
  for (pid_t pid : children.pids) {
    for (int port : listening_ports(pid)) ports.insert(port);
  }
  ASSERT_GE(ports.size(), static_cast<size_t>(kStrayRanks)) << "a listener per worker at least";
  Hammer hammer;
  const Stray kinds[] = {Stray::kRandomBytes, Stray::kCloseAtOnce, Stray::kSilent, Stray::kWrongHello};
  for (int port : ports) {
    int hits = 0;
    for (int round = 0; round < 5; ++round) {
      for (Stray kind : kinds) hits += hammer.hit(port, kind);
    }
    EXPECT_GT(hits, 0) << "no stray connection reached port " << port;
  }
  // Let the workers connect, and keep hitting the listeners while they do.
  files.set("go", "1");
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  std::vector<int> status(kStrayRanks, -1);
  for (size_t round = 0; Clock::now() < deadline; ++round) {
    bool running = false;
    for (int rank = 0; rank < kStrayRanks; ++rank) {
      if (status[rank] == -1) status[rank] = wait_for_exit(children.pids[rank], milliseconds(0));
      running = running || status[rank] == -1;
    }
    if (!running) break;
    for (int port : ports) hammer.hit(port, kinds[round % 4]);
    std::this_thread::sleep_for(milliseconds(1));
  }
  for (int rank = 0; rank < kStrayRanks; ++rank) {
    std::string message;
    try {
      message = files.get("error/" + std::to_string(rank), milliseconds(0));
    } catch (const DeadlineExceededError&) {
    }
    EXPECT_EQ(status[rank], 0) << "worker " << rank << " exit status (-1: still running after 60 s); " << message;
  }
}

}  // namespace
}  // namespace lockstep::distribute
