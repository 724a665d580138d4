// Multi-worker training with real processes on 127.0.0.1: equivalence with one worker, identical weights
// on every worker, kill -9 of any worker, an unreachable chief, mismatched workers and bad TF_CONFIGs; every
// wait has a deadline, and what ended a wait is checked by its message, not by the time it took.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "lockstep/tensor/tensor.h"
#include "process_util.h"

namespace lockstep::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

class MultiWorker : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_dir("multiworker");
    write_idx_dataset(dir_, 640, 64);
  }
  void TearDown() override { fs::remove_all(dir_); }

 public:
  const fs::path& dir() const { return dir_; }
  std::string data() const { return " --dataset " + dir_.string() + " --threads 1 --verbose 0"; }
  // Starts one process per worker on fresh ports, each with its own TF_CONFIG and arguments.
  std::vector<std::unique_ptr<Worker>> start(const std::vector<std::string>& args, const std::string& env = "") {
    return start_workers(args, env, dir_, "w");
  }
  fs::path dir_;
};

// The custom loop records each step's global loss; 2 x 64 must see the same 128 examples per step as 1 x 128.
// `device` and `env` choose where the workers compute and how they reduce.
void expect_two_workers_match_one(MultiWorker& t, const std::string& device, const std::string& env) {
  const fs::path& dir = t.dir();
  const std::string common = "train --loop ctl --epochs 1 --steps-per-epoch 20 --optimizer sgd --learning-rate 0.05 "
                             "--seed 3 --device " + device + t.data();
  Result one = run_lockstep(common + " --batch-size 128 --metrics-out " + (dir / "one.json").string(), env);
  ASSERT_EQ(one.code, 0) << one.err;
  auto ws = start_workers({common + " --batch-size 64 --metrics-out " + (dir / "two.json").string(),
                           common + " --batch-size 64"},
                          env, dir, "w");
  for (auto& w : ws) {
    auto s = w->wait(240s);
    ASSERT_TRUE(s.has_value()) << "worker did not finish";
    ASSERT_EQ(exit_code(*s), 0) << w->err();
  }
  json a = json::parse(read_all((dir / "one.json").string())), b = json::parse(read_all((dir / "two.json").string()));
  EXPECT_EQ(a["device"], b["device"]);
  EXPECT_EQ(b["num_workers"], 2);
  EXPECT_EQ(b["num_replicas_in_sync"], 2);
  auto la = a["step_losses"].get<std::vector<double>>(), lb = b["step_losses"].get<std::vector<double>>();
  ASSERT_EQ(la.size(), 20u);
  ASSERT_EQ(lb.size(), 20u);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(lb[i], la[i], 1e-5 * std::abs(la[i])) << "step " << i;
  auto hashes = b["weights_sha256_per_worker"].get<std::vector<std::string>>();
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_EQ(hashes[0], hashes[1]);
}

TEST_F(MultiWorker, TwoWorkersMatchOneWorkerWithTheGlobalBatch) { expect_two_workers_match_one(*this, "cpu", ""); }

// Two processes sharing the one GPU: RING reduces host copies of their GPU gradients over the network.
TEST_F(MultiWorker, TwoWorkersOnOneGpuMatchOneWorkerWithTheGlobalBatch) {
  if (gpu_count() == 0) GTEST_SKIP() << "no GPU visible to this process";
  expect_two_workers_match_one(*this, "gpu", "LOCKSTEP_COLLECTIVE=ring");
}

// Workers on one host reduce over shared memory by default; LOCKSTEP_COLLECTIVE=ring sends the same job over the
// network backend (UCX over TCP), and LOCKSTEP_COLLECTIVE=gloo over gloo. All compute a + b for every element of
// every gradient, so 20 steps end with the same bits, in the custom loop and in fit.
TEST_F(MultiWorker, SharedMemoryAndTheNetworkPathReachBitwiseTheSameWeights) {
  for (const std::string loop : {"ctl", "fit"}) {
    const std::string common = "train --workers 2 --loop " + loop +
                               " --epochs 1 --steps-per-epoch 20 --batch-size 32 --optimizer adam --seed 5" + data();
    Result shm = run_lockstep(common + " --metrics-out " + (dir_ / "shm.json").string());
    ASSERT_EQ(shm.code, 0) << shm.err << shm.out;
    EXPECT_NE(shm.err.find("collective backend: shared memory (UCX), all 2 workers on one host"), std::string::npos)
        << shm.err;
    EXPECT_NE(shm.err.find("each of the 2 workers updates its part of every variable"), std::string::npos) << shm.err;
    const json a = json::parse(read_all((dir_ / "shm.json").string()));
    EXPECT_EQ(a["global_steps"], 20) << loop;
    const auto hashes = a["weights_sha256_per_worker"].get<std::vector<std::string>>();
    ASSERT_EQ(hashes.size(), 2u);
    EXPECT_EQ(hashes[0], hashes[1]) << loop;
    for (const auto& [value, logged] : {std::pair{"ring", "collective backend: UCX over TCP, as "},
                                        std::pair{"gloo", "collective backend: gloo (TCP), as "}}) {
      const fs::path out = dir_ / (std::string(value) + ".json");
      Result r = run_lockstep(common + " --metrics-out " + out.string(), "LOCKSTEP_COLLECTIVE=" + std::string(value));
      ASSERT_EQ(r.code, 0) << r.err << r.out;
      EXPECT_NE(r.err.find(logged), std::string::npos) << r.err;
      const json b = json::parse(read_all(out.string()));
      EXPECT_EQ(b["global_steps"], 20) << loop << " " << value;
      EXPECT_EQ(a["weights_sha256"], b["weights_sha256"]) << loop << " " << value << ": the paths trained different weights";
    }
  }
}

// Three workers on one host share the update (each updates a third of every variable and Adam slot, in every
// worker's copy): every worker ends with the same weights, and each step's global loss matches the network path's,
// whose ring sums the three gradients in another order.
TEST_F(MultiWorker, ThreeWorkersSharingTheUpdateMatchTheNetworkPath) {
  const std::string common = "train --workers 3 --loop ctl --epochs 1 --steps-per-epoch 15 --batch-size 32 "
                             "--optimizer adam --seed 7" + data();
  Result shm = run_lockstep(common + " --metrics-out " + (dir_ / "shm.json").string());
  ASSERT_EQ(shm.code, 0) << shm.err << shm.out;
  EXPECT_NE(shm.err.find("each of the 3 workers updates its part of every variable"), std::string::npos) << shm.err;
  Result ring = run_lockstep(common + " --metrics-out " + (dir_ / "ring.json").string(), "LOCKSTEP_COLLECTIVE=ring");
  ASSERT_EQ(ring.code, 0) << ring.err << ring.out;
  const json a = json::parse(read_all((dir_ / "shm.json").string()));
  const json b = json::parse(read_all((dir_ / "ring.json").string()));
  const auto hashes = a["weights_sha256_per_worker"].get<std::vector<std::string>>();
  ASSERT_EQ(hashes.size(), 3u);
  EXPECT_EQ(hashes[0], hashes[1]);
  EXPECT_EQ(hashes[0], hashes[2]);
  const auto la = a["step_losses"].get<std::vector<double>>(), lb = b["step_losses"].get<std::vector<double>>();
  ASSERT_EQ(la.size(), 15u);
  ASSERT_EQ(lb.size(), 15u);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(la[i], lb[i], 1e-5 * std::abs(lb[i])) << "step " << i;
  EXPECT_NE(la.back(), la.front());  // it trained
}

// Two simulated hosts (network namespaces made by bench/netns/cluster.sh, 10.213.0.1-2) with two workers each:
// the workers reduce over shared memory inside each host and over the network between the hosts' first workers. All
// four end with the same weights, and the steps' global losses match one worker with the global batch. Needs
// root and iproute2; skipped otherwise.
TEST_F(MultiWorker, WorkersOnTwoHostsReduceOverSharedMemoryInsideEachAndTheNetworkBetween) {
  const fs::path cluster = fs::path(LOCKSTEP_SOURCE_DIR) / "bench/netns/cluster.sh";
  if (::geteuid() != 0 || std::system((cluster.string() + " check >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "needs root and iproute2 for network namespaces (bench/netns/cluster.sh check)";
  ASSERT_EQ(std::system((cluster.string() + " up 2 --rate 10gbit >/dev/null 2>&1").c_str()), 0);
  struct Down {
    fs::path cluster;
    ~Down() { [[maybe_unused]] int rc = std::system((cluster.string() + " down >/dev/null 2>&1").c_str()); }
  } down{cluster};
  const std::string common = "train --loop ctl --epochs 1 --steps-per-epoch 20 --optimizer sgd --learning-rate 0.05 --seed 3" + data();
  Result one = run_lockstep(common + " --batch-size 128 --metrics-out " + (dir_ / "one.json").string());
  ASSERT_EQ(one.code, 0) << one.err;
  const char* bin = std::getenv("LOCKSTEP_BIN_DIR");
  std::string script;
  for (int i = 0; i < 4; ++i) {
    const std::string tf_config = R"({"cluster":{"worker":["10.213.0.1:24101","10.213.0.1:24102","10.213.0.2:24103",)"
                                  R"("10.213.0.2:24104"]},"task":{"type":"worker","index":)" + std::to_string(i) + "}}";
    script += "TF_CONFIG='" + tf_config + "' OMP_NUM_THREADS=1 timeout -k 5 120 " + cluster.string() + " exec " +
              std::to_string(i / 2) + " " + (bin ? bin : LOCKSTEP_BIN_DIR) + "/lockstep " + common +
              " --batch-size 32 --metrics-out " + (dir_ / ("w" + std::to_string(i) + ".json")).string() + " 2>" +
              (dir_ / ("err" + std::to_string(i))).string() + " & ";
  }
  std::ofstream(dir_ / "run.sh") << script << "wait\n";
  ASSERT_EQ(std::system(("bash " + (dir_ / "run.sh").string()).c_str()), 0);
  for (int i = 0; i < 4; ++i) {
    const std::string err = read_all((dir_ / ("err" + std::to_string(i))).string());
    EXPECT_NE(err.find("collective backend: shared memory (UCX) inside each of 2 hosts, UCX over TCP between them"),
              std::string::npos) << "worker " << i << ": " << err;
  }
  const json a = json::parse(read_all((dir_ / "one.json").string()));
  const json b = json::parse(read_all((dir_ / "w0.json").string()));
  EXPECT_EQ(b["num_workers"], 4);
  const auto hashes = b["weights_sha256_per_worker"].get<std::vector<std::string>>();
  ASSERT_EQ(hashes.size(), 4u);
  for (const std::string& h : hashes) EXPECT_EQ(h, hashes[0]);
  auto la = a["step_losses"].get<std::vector<double>>(), lb = b["step_losses"].get<std::vector<double>>();
  ASSERT_EQ(lb.size(), la.size());
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(lb[i], la[i], 1e-5 * std::abs(la[i])) << "step " << i;
}

TEST_F(MultiWorker, FitOnTwoWorkersKeepsWeightsIdentical) {
  Result r = run_lockstep("train --workers 2 --epochs 2 --batch-size 32 --metrics-out " + (dir_ / "fit.json").string() + data());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  json m = json::parse(read_all((dir_ / "fit.json").string()));
  auto hashes = m["weights_sha256_per_worker"].get<std::vector<std::string>>();
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_EQ(hashes[0], hashes[1]);
  EXPECT_EQ(m["global_steps"], 2 * 10);  // 640 / 64 per epoch
  EXPECT_NE(r.out.find("[worker 0]"), std::string::npos) << r.out;
}

// --gradient-compression bfloat16 reaches every launched worker: their weights stay identical to each
// other and differ from the float32 run's.
TEST_F(MultiWorker, BFloat16GradientsKeepWorkersIdenticalAndChangeTheWeights) {
  auto run = [&](const std::string& compression) {
    const std::string out = (dir_ / (compression + ".json")).string();
    Result r = run_lockstep("train --workers 2 --epochs 1 --steps-per-epoch 4 --batch-size 32 --optimizer sgd "
                            "--gradient-compression " + compression + " --metrics-out " + out + data());
    EXPECT_EQ(r.code, 0) << r.err << r.out;
    return json::parse(read_all(out))["weights_sha256_per_worker"].get<std::vector<std::string>>();
  };
  auto bf16 = run("bfloat16"), f32 = run("none");
  ASSERT_EQ(bf16.size(), 2u);
  ASSERT_EQ(f32.size(), 2u);
  EXPECT_EQ(bf16[0], bf16[1]);
  EXPECT_EQ(f32[0], f32[1]);
  EXPECT_NE(bf16[0], f32[0]);
}

// A process that claims worker 1's place with another cluster token is refused with one line and exit 2,
// the chief logs the refusal with the caller's address, and the rightful job trains to the end.
TEST_F(MultiWorker, AWorkerWithTheWrongTokenIsRefusedWhileTheJobTrains) {
  const std::string args = "train --epochs 1 --steps-per-epoch 5 --batch-size 32" + data();
  const std::vector<int> ports = {free_port(), free_port()};
  auto env = [&](const std::string& token, int index) {
    return "LOCKSTEP_CLUSTER_TOKEN=" + token + " TF_CONFIG='" + tf_config(ports, index) + "'";
  };
  Worker impostor(args, env("not-the-job-token", 1), dir_, "impostor");
  Worker chief(args, env("the-job-token", 0), dir_, "chief");
  Worker worker(args, env("the-job-token", 1), dir_, "worker");
  auto refused = impostor.wait(120s);
  ASSERT_TRUE(refused.has_value()) << "the impostor was not refused";
  EXPECT_EQ(exit_code(*refused), 2) << impostor.err();
  const std::string message = impostor.err();
  EXPECT_NE(message.find("refused this task's cluster token"), std::string::npos) << message;
  EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
  for (Worker* w : {&chief, &worker}) {
    auto s = w->wait(240s);
    ASSERT_TRUE(s.has_value()) << "a rightful worker did not finish";
    EXPECT_EQ(exit_code(*s), 0) << w->err();
  }
  EXPECT_NE(chief.err().find("refused a call from ipv4:127.0.0.1:"), std::string::npos) << chief.err();
  EXPECT_EQ((chief.err() + worker.err()).find("the-job-token"), std::string::npos);
}

TEST_F(MultiWorker, ChiefAndWorkerEvaluateATestSetSmallerThanTheGlobalBatch) {
  // TF_CONFIG with a chief job (rank 0) and one worker; the 64 test images are fewer than one global test
  // batch, so evaluation must spread them over both replicas instead of skipping them.
  const std::string cluster = R"({"cluster": {"chief": ["127.0.0.1:)" + std::to_string(free_port()) +
                              R"("], "worker": ["127.0.0.1:)" + std::to_string(free_port()) + R"("]}, "task": )";
  const std::string args = "train --epochs 2 --batch-size 32 --optimizer adam --learning-rate 0.003" + data();
  Worker chief(args + " --metrics-out " + (dir_ / "cw.json").string(),
               "TF_CONFIG='" + cluster + R"({"type": "chief", "index": 0}})" + "'", dir_, "chief");
  Worker worker(args, "TF_CONFIG='" + cluster + R"({"type": "worker", "index": 0}})" + "'", dir_, "worker");
  for (Worker* w : {&chief, &worker}) {
    auto s = w->wait(120s);
    ASSERT_TRUE(s.has_value());
    ASSERT_EQ(exit_code(*s), 0) << w->err();
  }
  json m = json::parse(read_all((dir_ / "cw.json").string()));
  EXPECT_EQ(m["num_workers"], 2);
  EXPECT_GT(m["test_accuracy"].get<double>(), 0.5);  // the generated labels are easy to learn
  auto hashes = m["weights_sha256_per_worker"].get<std::vector<std::string>>();
  EXPECT_EQ(hashes[0], hashes[1]);
}

class KillWorker : public MultiWorker, public ::testing::WithParamInterface<int> {};

// The heartbeat timeout (600 s here) and the collectives' (600 s by default) are longer than the test waits, so
// the survivors can only learn of the kill from the closed connections; a timeout's message would say "timed out".
TEST_P(KillWorker, OthersExitWithinSecondsNamingIt) {
  const int victim = GetParam();
  const std::string args = "train --epochs 1 --steps-per-epoch 100000 --batch-size 16" + data();
  auto ws = start({args, args, args}, "LOCKSTEP_HEARTBEAT_TIMEOUT=600");
  // Wait until everybody trains (the victim has joined and is past its first steps).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (ws[static_cast<size_t>(victim)]->err().find("joined the cluster") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "workers never started: " << ws[0]->err();
    std::this_thread::sleep_for(100ms);
  }
  std::this_thread::sleep_for(2s);
  ws[static_cast<size_t>(victim)]->signal(SIGKILL);
  const std::string lost = "worker:" + std::to_string(victim);
  for (int i = 0; i < 3; ++i) {
    if (i == victim) continue;
    auto s = ws[static_cast<size_t>(i)]->wait(90s);
    ASSERT_TRUE(s.has_value()) << "worker " << i << " still runs 90 s after worker " << victim << " was killed";
    EXPECT_NE(exit_code(*s), 0);
    const std::string err = ws[static_cast<size_t>(i)]->err();
    EXPECT_NE(err.find(lost), std::string::npos) << err;
    EXPECT_EQ(err.find("timed out"), std::string::npos) << err;
  }
}

INSTANTIATE_TEST_SUITE_P(AnyWorker, KillWorker, ::testing::Values(0, 1, 2),
                         [](const auto& info) { return info.param == 0 ? std::string("chief") : "worker" + std::to_string(info.param); });

TEST_F(MultiWorker, UnreachableChiefFailsAfterTheStartupTimeout) {
  // Worker 1 of a cluster whose chief never starts.
  const std::string cfg = tf_config({free_port(), free_port()}, 1);
  const auto start_time = std::chrono::steady_clock::now();
  Result r = run_lockstep("train --epochs 1" + data(), "LOCKSTEP_STARTUP_TIMEOUT=3 TF_CONFIG='" + cfg + "'", 60);
  const auto took = std::chrono::steady_clock::now() - start_time;
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("127.0.0.1"), std::string::npos) << r.err;
  // The 3 s of LOCKSTEP_STARTUP_TIMEOUT ended the wait, not the default 120 s (which run_lockstep's 60 s would cut).
  EXPECT_NE(r.err.find("after 3 s"), std::string::npos) << r.err;
  // A lower bound, so load cannot break it: the worker's 3 s start after start_time.
  EXPECT_GE(took, 3s);
}

TEST_F(MultiWorker, MismatchedWorkersAreRefusedAtStart) {
  for (auto [chief, other, phrase] : {std::tuple{"--model tutorial_cnn --batch-size 32", "--model fashion_cnn --batch-size 32", "model differs"},
                                      {"--batch-size 32", "--batch-size 16", "global batch size"}}) {
    auto ws = start({"train --epochs 1 " + std::string(chief) + data(), "train --epochs 1 " + std::string(other) + data()});
    for (auto& w : ws) {
      auto s = w->wait(60s);
      ASSERT_TRUE(s.has_value()) << "a mismatched worker did not stop";
      EXPECT_NE(exit_code(*s), 0);
    }
    EXPECT_NE((ws[0]->err() + ws[1]->err()).find(phrase), std::string::npos) << ws[0]->err() << ws[1]->err();
  }
}

TEST_F(MultiWorker, MalformedTfConfigIsOneLineAndExitCode2) {
  for (std::string cfg : {"{not json", R"({"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "worker", "index": 3}})",
                          R"({"cluster": {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}, "task": {"type": "worker", "index": 0}})",
                          R"({"cluster": {"worker": ["127.0.0.1"]}, "task": {"type": "worker", "index": 0}})"}) {
    Result r = run_lockstep("train --epochs 1" + data(), "TF_CONFIG='" + cfg + "'", 60);
    EXPECT_EQ(r.code, 2) << cfg << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << cfg << ": " << r.err;
  }
}

}  // namespace
}  // namespace lockstep::testing
