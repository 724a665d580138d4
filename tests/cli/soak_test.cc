// Soak: a 3-worker fit job with BackupAndRestore, run through several incarnations that each end in chaos — a
// kill -9 of a random worker, or a SIGSTOP longer than the heartbeat timeout — with SIGSTOP/SIGCONT pauses
// shorter than the timeout on the way, the whole group restarted after each as a cluster manager would. It
// checks that every failure ends every worker within a bound, that the backup is whole after every
// incarnation and is what the next one resumes from, and that the job ends with bitwise the weights of an
// uninterrupted run. The schedule comes from a seed: LOCKSTEP_SOAK_SEED=<n> replays it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <regex>

#include <nlohmann/json.hpp>

#include "lockstep/train/checkpoint.h"
#include "lockstep/train/safetensors.h"
#include "process_util.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using ms = std::chrono::milliseconds;

// A small job: fashion_cnn (1.5 MB of weights and Adam slots per backup), 3 workers x 8 images per step,
// 80 steps per epoch, 4 epochs: backups fall mid-epoch and on epoch boundaries.
constexpr int kWorkers = 3;
constexpr int kBatchSize = 8;
constexpr int kStepsPerEpoch = 80;
constexpr int kEpochs = 4;
constexpr int kBackupFreq = 3;  // steps between backups
constexpr int kFaultyRuns = 6;  // incarnations ended by a fault, before the one left to finish
// Short, so that a long pause costs seconds. A short pause stays under half of it: a worker's last heartbeat
// may already be an interval (1 s) old when it is stopped, and a loaded machine delays the next one.
constexpr ms kHeartbeatTimeout = 5s;
constexpr ms kShortPauseMax = 2s;
// Deadlines, not expectations: past one, something hangs. A fault must end every worker within
// kFailureBound (the heartbeat timeout plus ample slack for a machine shared with other builds).
constexpr ms kFailureBound = kHeartbeatTimeout + 30s;
constexpr ms kJoinBound = 90s;
constexpr ms kRunBound = 240s;

void say(const std::string& line) {
  std::printf("[   soak   ] %s\n", line.c_str());
  std::fflush(stdout);
}

std::string seconds(ms d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(d.count()) / 1000);
  return buf;
}

// The seeded choices, made without std's distributions so that a seed means the same schedule everywhere.
struct Chaos {
  std::mt19937_64 rng;
  int worker() { return static_cast<int>(rng() % kWorkers); }
  ms between(ms lo, ms hi) {
    return lo + ms(static_cast<int64_t>(rng() % static_cast<uint64_t>((hi - lo).count() + 1)));
  }
};

enum class Fault { kill, long_pause };

// One incarnation of the job: kWorkers processes of the same command, told their restart count.
class Group {
 public:
  Group(const std::string& args, int run, const fs::path& dir)
      : workers_(start_workers(
            std::vector<std::string>(kWorkers, args),
            "OMP_NUM_THREADS=1 LOCKSTEP_HEARTBEAT_TIMEOUT=" + std::to_string(kHeartbeatTimeout.count() / 1000) +
                " LOCKSTEP_RESTART_COUNT=" + std::to_string(run),
            dir, "run" + std::to_string(run) + "_worker")) {}
  Worker& operator[](int i) { return *workers_[static_cast<size_t>(i)]; }
  // Every worker logged that it joined the cluster: registration and the collectives' rendezvous are done.
  bool joined() const {
    for (const auto& w : workers_)
      if (w->err().find("joined the cluster") == std::string::npos) return false;
    return true;
  }
  // The first worker found exited, or -1 (does not block).
  int exited() {
    for (int i = 0; i < kWorkers; ++i)
      if ((*this)[i].wait(0ms)) return i;
    return -1;
  }
  // Waits until every worker but `except` has exited; false at the deadline.
  bool wait_all(Clock::time_point deadline, int except = -1) {
    for (int i = 0; i < kWorkers; ++i)
      if (i != except && !(*this)[i].wait(std::max(ms(0), std::chrono::duration_cast<ms>(deadline - Clock::now()))))
        return false;
    return true;
  }
  int code(int i) { return exit_code(*(*this)[i].wait(0ms)); }
  std::string logs() const {
    std::string all;
    for (size_t i = 0; i < workers_.size(); ++i) all += "--- worker " + std::to_string(i) + ":\n" + workers_[i]->err();
    return all;
  }

 private:
  std::vector<std::unique_ptr<Worker>> workers_;
};

// Where a restart resumes: the newest checkpoint the index names, else (no index yet: killed between the
// first file's rename and the index write) the highest-numbered file, as CheckpointManager decides.
struct Backup {
  std::string resume;  // prefix, empty when there is nothing to resume from
  int64_t save_counter = 0, step = -1, epoch = -1, step_in_epoch = -1;
};

// Checks the backup directory as a restart will find it, after every worker has exited: every checkpoint file
// whole (each tensor's CRC32C), from this job, and the resume point never behind the previous one.
Backup check_backup(const fs::path& dir, const Backup& before) {
  Backup now;
  if (!fs::exists(dir)) return now;  // none yet, or the job completed and removed it
  const std::regex checkpoint_file(R"(ckpt-(\d+)\.safetensors)");
  std::map<int64_t, std::map<std::string, std::string>> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (name == "checkpoint" || name.find(".tmp.") != std::string::npos)
      continue;  // a temporary file: a write the kill interrupted
    if (!std::regex_match(name, m, checkpoint_file)) {
      ADD_FAILURE() << "unexpected file in the backup directory: " << name;
      continue;
    }
    try {
      files[std::stoll(m[1])] = train::load_safetensors(entry.path().string()).metadata;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "a checkpoint a restart may read is damaged: " << e.what();
    }
  }
  if (files.empty()) return now;
  const std::optional<std::string> indexed = train::latest_checkpoint(dir.string());
  now.resume = indexed.value_or((dir / ("ckpt-" + std::to_string(files.rbegin()->first))).string());
  const int64_t n = std::stoll(now.resume.substr(now.resume.rfind('-') + 1));
  if (!files.count(n)) {
    ADD_FAILURE() << "the index names " << now.resume << ", which is not a whole checkpoint";
    return before;
  }
  auto& meta = files[n];
  EXPECT_EQ(meta["format"], "lockstep.checkpoint");
  EXPECT_EQ(meta["world_size"], std::to_string(kWorkers));
  EXPECT_EQ(meta["save_counter"], std::to_string(n)) << now.resume;
  now.save_counter = n;
  now.step = std::stoll(meta["step"]);
  now.epoch = std::stoll(meta["epoch"]);
  now.step_in_epoch = std::stoll(meta["step_in_epoch"]);
  EXPECT_EQ(now.step % kBackupFreq, 0) << now.resume << " was saved at step " << now.step;
  EXPECT_EQ(now.step, now.epoch * kStepsPerEpoch + now.step_in_epoch)
      << now.resume << ": the step disagrees with the position";
  EXPECT_GE(now.step, before.step) << "the resume point went back from " << before.resume << " to " << now.resume;
  return now;
}

class Soak : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("soak");
    write_idx_dataset(dir_, kWorkers * kBatchSize * kStepsPerEpoch, 48);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string args(const fs::path& backup, const fs::path& metrics) const {
    return "train --model fashion_cnn --dataset " + dir_.string() + " --epochs " + std::to_string(kEpochs) +
           " --batch-size " + std::to_string(kBatchSize) +
           " --optimizer adam --seed 11 --threads 1 --verbose 0 --backup-dir " + backup.string() + " --backup-freq " +
           std::to_string(kBackupFreq) + " --metrics-out " + metrics.string();
  }

  // Sleeps for `d` unless a worker exits first. A worker may only exit early because the job is complete:
  // then every worker must exit 0 (sets completed_); anything else is a failure no fault explains.
  // `paused`: a worker under SIGSTOP, let go first.
  bool sleep_watching(Group& g, ms d, const std::string& during, int paused = -1) {
    const auto end = Clock::now() + d;
    while (Clock::now() < end) {
      const int i = g.exited();
      if (i >= 0) {
        if (paused >= 0) g[paused].signal(SIGCONT);
        EXPECT_EQ(g.code(i), 0) << "worker " << i << " exited " << during << "\n" << g.logs();
        EXPECT_TRUE(g.wait_all(Clock::now() + kFailureBound)) << "hang: the job ended on worker " << i << " only\n"
                                                              << g.logs();
        for (int w = 0; w < kWorkers; ++w) EXPECT_EQ(g.code(w), 0) << "worker " << w << "\n" << g.logs();
        completed_ = !::testing::Test::HasFailure();
        return false;
      }
      std::this_thread::sleep_for(20ms);
    }
    return true;
  }

  // One incarnation: a few short pauses, then (unless `last`) a kill or a long pause; it returns once every
  // worker has exited. Sets completed_ when the job finished in it, restored_ when it resumed from a backup
  // (which must be the one check_backup saw last).
  void run_once(const std::string& args, int run, bool last, ms window) {
    Group g(args, run, dir_);
    drive(g, run, last, window);
    const std::string chief = g[0].err();
    const size_t at = chief.find("BackupAndRestore: restored");
    restored_ = at != std::string::npos;
    if (restored_) {
      ASSERT_FALSE(resume_.resume.empty()) << "run " << run << " resumed from a backup there was none of\n" << g.logs();
      const std::string expected = "BackupAndRestore: restored epoch " + std::to_string(resume_.epoch + 1) + " step " +
                                   std::to_string(resume_.step_in_epoch) + " from " + resume_.resume + "\n";
      EXPECT_EQ(chief.substr(at, expected.size()), expected) << "run " << run << " resumed from the wrong backup\n"
                                                             << g.logs();
    }
  }

  void drive(Group& g, int run, bool last, ms window) {
    const std::string tag = "run " + std::to_string(run) + ": ";
    const auto join_deadline = Clock::now() + kJoinBound;
    while (!g.joined()) {
      const int i = g.exited();
      ASSERT_LT(i, 0) << tag << "worker " << i << " exited with code " << g.code(i) << " before the cluster formed\n"
                      << g.logs();
      ASSERT_LT(Clock::now(), join_deadline)
          << tag << "hang: the workers did not join within " << seconds(kJoinBound) << "\n"
          << g.logs();
      std::this_thread::sleep_for(20ms);
    }
    const int pauses = 1 + static_cast<int>(chaos_.rng() % 2);
    for (int p = 0; p < pauses; ++p) {
      const ms gap = chaos_.between(0ms, window / 2), pause = chaos_.between(100ms, kShortPauseMax);
      const int w = chaos_.worker();
      if (!sleep_watching(g, gap, "before any fault")) return;
      say(tag + "SIGSTOP worker " + std::to_string(w) + " for " + seconds(pause));
      g[w].signal(SIGSTOP);
      const bool carried_on = sleep_watching(g, pause,
                                             "while worker " + std::to_string(w) + " was paused for " + seconds(pause) +
                                                 ", less than the heartbeat timeout",
                                             w);
      g[w].signal(SIGCONT);
      if (!carried_on) return;
    }
    if (last) {
      say(tag + "left to finish");
      ASSERT_TRUE(g.wait_all(Clock::now() + kRunBound))
          << tag << "hang: not finished within " << seconds(kRunBound) << "\n"
          << g.logs();
      for (int w = 0; w < kWorkers; ++w) ASSERT_EQ(g.code(w), 0) << tag << "worker " << w << "\n" << g.logs();
      completed_ = true;
      return;
    }
    const bool kill = faults_[static_cast<size_t>(run)] == Fault::kill;
    const int victim = chaos_.worker();
    if (!sleep_watching(g, chaos_.between(0ms, window), "before any fault")) return;
    if (kill) {
      say(tag + "SIGKILL worker " + std::to_string(victim));
      g[victim].signal(SIGKILL);
      ASSERT_TRUE(g.wait_all(Clock::now() + kFailureBound))
          << tag << "hang: workers still running " << seconds(kFailureBound) << " after worker " << victim
          << " was killed\n"
          << g.logs();
    } else {
      say(tag + "SIGSTOP worker " + std::to_string(victim) + " past the heartbeat timeout");
      g[victim].signal(SIGSTOP);
      const auto stopped = Clock::now();
      const bool ended = g.wait_all(stopped + kFailureBound, victim);
      say(tag + "the others exited " + seconds(std::chrono::duration_cast<ms>(Clock::now() - stopped)) +
          " after the stop");
      std::this_thread::sleep_for(chaos_.between(0ms, 1000ms));
      g[victim].signal(SIGCONT);
      ASSERT_TRUE(ended) << tag << "hang: workers still running " << seconds(kFailureBound) << " after worker "
                         << victim << " stopped\n"
                         << g.logs();
      ASSERT_TRUE(g.wait_all(Clock::now() + kFailureBound))
          << tag << "hang: worker " << victim << " still running " << seconds(kFailureBound) << " after SIGCONT\n"
          << g.logs();
    }
    // A clean failure is exit code 1 (the environment failed: a cluster manager restarts) after an error line
    // naming the failed task; 0 only if the job had finished all its collectives before the fault.
    bool all_zero = true;
    for (int w = 0; w < kWorkers; ++w) {
      const int c = g.code(w);
      all_zero = all_zero && c == 0;
      if (kill && w == victim) continue;  // 137, or 0 had it just finished
      EXPECT_TRUE(c == 0 || c == 1) << tag << "worker " << w << " exited with code " << c << "\n" << g.logs();
      if (c == 1) {
        std::vector<std::string> said = lines_after(g[w].err(), "E ");
        for (const std::string& line : lines_after(g[w].err(), "lockstep: error: ")) said.push_back(line);
        EXPECT_TRUE(std::any_of(said.begin(), said.end(),
                                [](const std::string& l) { return l.find("worker:") != std::string::npos; }))
            << tag << "worker " << w << " failed without a line naming the task that failed\n"
            << g.logs();
      }
    }
    completed_ = all_zero;
  }

  fs::path dir_;
  Chaos chaos_;
  std::vector<Fault> faults_;  // per faulty run
  bool completed_ = false, restored_ = false;
  Backup resume_;
};

TEST_F(Soak, ThreeWorkersThroughKillsAndPausesEndWithTheUninterruptedWeights) {
  const char* given = std::getenv("LOCKSTEP_SOAK_SEED");
  const uint64_t seed = given ? std::stoull(given) : std::random_device{}();
  say("seed " + std::to_string(seed) + " (LOCKSTEP_SOAK_SEED=" + std::to_string(seed) + " replays this schedule)");
  SCOPED_TRACE("LOCKSTEP_SOAK_SEED=" + std::to_string(seed));
  chaos_.rng.seed(seed);
  // Both kinds of fault in every schedule, in a seeded order.
  faults_ = {Fault::kill, Fault::kill, Fault::kill, Fault::kill, Fault::long_pause, Fault::long_pause};
  for (size_t i = faults_.size() - 1; i > 0; --i) std::swap(faults_[i], faults_[chaos_.rng() % (i + 1)]);
  const auto start = Clock::now();

  // The uninterrupted run: the weights to end with, and how long training takes, to place the faults.
  const fs::path reference = dir_ / "reference.json";
  {
    Group g(args(dir_ / "reference_backup", reference), 0, dir_);
    ASSERT_TRUE(g.wait_all(Clock::now() + kRunBound)) << "hang: the uninterrupted run\n" << g.logs();
    for (int w = 0; w < kWorkers; ++w) ASSERT_EQ(g.code(w), 0) << g.logs();
  }
  const ms took = std::chrono::duration_cast<ms>(Clock::now() - start);
  say("uninterrupted run: " + seconds(took));
  ASSERT_FALSE(fs::exists(dir_ / "reference_backup")) << "the backup is removed after the job completed";

  // Events spread over an eighth of a whole run after the cluster forms: most incarnations get a few backups
  // further, and the job is rarely done before the last fault.
  const ms window = std::max(ms(500), took / 8);
  const fs::path backup = dir_ / "backup", metrics = dir_ / "metrics.json";
  int run = 0;
  for (;; ++run) {
    ASSERT_NO_FATAL_FAILURE(run_once(args(backup, metrics), run, run == kFaultyRuns, window));
    if (completed_) break;
    const Backup before = resume_;
    resume_ = check_backup(backup, before);
    ASSERT_FALSE(HasFailure()) << "run " << run;
    if (resume_.save_counter > before.save_counter && !before.resume.empty()) {
      EXPECT_TRUE(restored_) << "run " << run << " saved new backups without resuming from " << before.resume;
    }
    if (!resume_.resume.empty())
      say("run " + std::to_string(run) + ": backup whole, a restart resumes at step " + std::to_string(resume_.step) +
          " from " + fs::path(resume_.resume).filename().string());
  }
  say("finished after " + std::to_string(run + 1) + " runs in " +
      seconds(std::chrono::duration_cast<ms>(Clock::now() - start)));
  if (fs::exists(backup)) {
    std::string left;
    for (const auto& e : fs::directory_iterator(backup)) left += " " + e.path().filename().string();
    ADD_FAILURE() << "the job completed but left its backup directory behind, holding" << left;
  }

  const json want = json::parse(read_all(reference.string())), got = json::parse(read_all(metrics.string()));
  EXPECT_EQ(got["weights_sha256"], want["weights_sha256"]) << "bitwise the weights of the uninterrupted run";
  EXPECT_EQ(got["weights_sha256_per_worker"], want["weights_sha256_per_worker"]);
  EXPECT_EQ(got["global_steps"], want["global_steps"]);
  EXPECT_EQ(got["epochs"], want["epochs"]) << "every epoch's statistics survive the restarts";
  EXPECT_EQ(got["restarts"], run);
}

}  // namespace
}  // namespace lockstep::testing
